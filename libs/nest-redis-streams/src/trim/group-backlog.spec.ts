import { type GroupBacklog, groupsAtRisk, safeFloor } from './group-backlog.js';

const group = (over: Partial<GroupBacklog>): GroupBacklog => ({
  name: 'g',
  pending: 0,
  lag: 0,
  lastDeliveredId: '0-0',
  oldestPendingId: null,
  ...over,
});

describe('safe floor', () => {
  it('is null without groups', () => {
    expect(safeFloor([])).toBeNull();
  });

  it('keeps the oldest pending entry, else the first undelivered one, over all groups', () => {
    expect(safeFloor([group({ lastDeliveredId: '100-5' })])).toBe('100-6');
    expect(safeFloor([group({ lastDeliveredId: '100-5', pending: 2, oldestPendingId: '90-0' })])).toBe('90-0');
    expect(
      safeFloor([
        group({ name: 'fast', lastDeliveredId: '500-0' }),
        group({ name: 'slow', lastDeliveredId: '300-0', pending: 1, oldestPendingId: '250-1' }),
      ]),
    ).toBe('250-1');
  });

  it('follows a last-delivered-id moved back below the pending entries (XGROUP SETID)', () => {
    expect(safeFloor([group({ lastDeliveredId: '10-0', pending: 1, oldestPendingId: '50-0' })])).toBe('10-1');
  });

  it('flags groups whose pending + lag exceed MAXLEN', () => {
    const groups = [group({ name: 'ok', pending: 10, lag: 10 }), group({ name: 'behind', pending: 30, lag: 80 })];
    expect(groupsAtRisk(groups, 100).map((g) => g.name)).toEqual(['behind']);
    expect(groupsAtRisk([group({ pending: 150, lag: null })], 100)).toHaveLength(1);
  });
});
