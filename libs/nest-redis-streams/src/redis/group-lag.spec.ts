import { trustedLag } from './group-lag.js';

describe('trustedLag', () => {
  const stream = { length: 25, lastGeneratedId: '300-0', firstEntryId: '100-0' };

  it('is 0 for a group delivered up to the last entry, whatever a stale entries-read makes Redis say', () => {
    expect(trustedLag({ lag: 20, lastDeliveredId: '300-0' }, stream)).toBe(0);
    expect(trustedLag({ lag: null, lastDeliveredId: '300-0' }, stream)).toBe(0);
    expect(trustedLag({ lag: 7, lastDeliveredId: '0-0' }, { length: 0, lastGeneratedId: '300-0', firstEntryId: null })).toBe(0);
  });

  it('is the length when every entry lies after last-delivered-id', () => {
    expect(trustedLag({ lag: 500, lastDeliveredId: '99-5' }, stream)).toBe(25);
    expect(trustedLag({ lag: null, lastDeliveredId: '0-0' }, stream)).toBe(25);
  });

  it("is unknown (null) when Redis reports more than the stream holds, else Redis' figure", () => {
    expect(trustedLag({ lag: 40, lastDeliveredId: '200-0' }, stream)).toBeNull();
    expect(trustedLag({ lag: 12, lastDeliveredId: '200-0' }, stream)).toBe(12);
    expect(trustedLag({ lag: null, lastDeliveredId: '100-0' }, stream)).toBeNull();
  });

  it('compares ids as numbers, not text', () => {
    expect(trustedLag({ lag: 3, lastDeliveredId: '1000-0' }, { length: 5, lastGeneratedId: '999-0', firstEntryId: '10-0' })).toBe(
      0,
    );
  });
});
