import { DeadLetterReason } from '../dead-letter-reason.js';
import { EventInProgressError } from '../errors/event-in-progress.error.js';
import { NonRetryableError } from '../errors/non-retryable.error.js';
import { RetryLater } from '../errors/retry-later.error.js';
import { TransportEvents } from '../events/transport-events.js';
import { EntryWrites } from './entry-writes.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import { type FailureRuntime, FailureHandler } from './failure-handler.js';
import { HeldEntry } from './held-entry.js';

// The failure handler's decisions (retry with back-off, park, hand back) are checked against a
// fake of the two ownership scripts it writes through. The fake keeps a tiny PEL, as the Lua does:
// ids this consumer owns, and which of them had their payload trimmed (Redis drops those from
// the PEL when they are claimed).

interface ClaimCall {
  stream: string;
  group: string;
  consumer: string;
  idleMs: number;
  retryCount: number;
  ids: string[];
}
interface ParkCall {
  stream: string;
  dlq: string;
  group: string;
  consumer: string;
  id: string;
  requireOwner: '1' | '0';
  meta: Record<string, string>;
  fallback: string[];
}

class FakeScripts {
  /** Ids pending for this consumer. */
  readonly owned = new Set<string>();
  /** Owned ids whose payload is gone from the stream. */
  readonly trimmed = new Set<string>();
  readonly claims: ClaimCall[] = [];
  readonly parks: ParkCall[] = [];
  failWith: Error | null = null;
  private parked = 0;

  own(...ids: string[]): this {
    for (const id of ids) this.owned.add(id);
    return this;
  }

  async nrsClaimIfOwned(stream: string, group: string, consumer: string, idleMs: number, retryCount: number, ...ids: string[]) {
    this.claims.push({ stream, group, consumer, idleMs, retryCount, ids });
    if (this.failWith) throw this.failWith;
    const lost: string[] = [];
    const trimmed: string[] = [];
    for (const id of ids) {
      if (!this.owned.has(id)) lost.push(id);
      else if (this.trimmed.has(id)) {
        trimmed.push(id);
        this.owned.delete(id);
      }
    }
    return [lost, trimmed] as [string[], string[]];
  }

  /** The back-off each retry recorded for operators, by id (see recovery/retry-waits.ts). */
  readonly backoffs: Array<[id: string, backoffMs: number]> = [];

  /** The retry's claim (recorded as one) and the record of its real times beside the stream. */
  async nrsRetryIfOwned(
    stream: string,
    waits: string,
    checks: string,
    group: string,
    consumer: string,
    ...args: Array<string | number>
  ) {
    expect([waits, checks]).toEqual([`{${stream}}:nrs-retry-waits:${group}`, `{${stream}}:nrs-retry-checks:${group}`]);
    const [idleMs, retryCount, backoffMs, , , , ...ids] = args;
    for (const id of ids) this.backoffs.push([String(id), Number(backoffMs)]);
    return this.nrsClaimIfOwned(stream, group, consumer, Number(idleMs), Number(retryCount), ...ids.map(String));
  }

  async nrsDeadLetterIfOwned(
    stream: string,
    dlq: string,
    group: string,
    consumer: string,
    id: string,
    requireOwner: '1' | '0',
    ...rest: string[]
  ) {
    const count = Number(rest[0]);
    const meta: Record<string, string> = {};
    for (let i = 1; i < count; i += 2) meta[rest[i]] = rest[i + 1];
    this.parks.push({ stream, dlq, group, consumer, id, requireOwner, meta, fallback: rest.slice(1 + count) });
    if (this.failWith) throw this.failWith;
    if (requireOwner === '1' && !this.owned.has(id)) return null;
    this.owned.delete(id);
    this.parked += 1;
    return `${this.parked}-0`;
  }
}

const options = { maxDeliveries: 3, minIdleTimeMs: 30_000, deadLetterStream: 'orders:dlq' };

function setup(scope: Partial<typeof options> = {}, retryBackoffMs = 1_000) {
  const commands = new FakeScripts();
  const logger = { log: jest.fn(), error: jest.fn(), warn: jest.fn(), debug: jest.fn(), verbose: jest.fn() };
  const events = new TransportEvents();
  const failed: string[] = [];
  const deadLettered: Array<{ id: string; reason: string; deadLetterId: string }> = [];
  events.on('failed', (event) => failed.push(event.id));
  events.on('dead-lettered', ({ id, reason, deadLetterId }) => deadLettered.push({ id, reason, deadLetterId }));
  const rt = { commands: commands as unknown as ScriptedRedis, logger, events, retryBackoffMs } as unknown as FailureRuntime;
  const resolved = { ...options, ...scope };
  const writes = new EntryWrites(commands as unknown as ScriptedRedis, {
    stream: 'orders',
    group: 'billing',
    consumer: 'c1',
    deadLetterStream: resolved.deadLetterStream,
    minIdleTimeMs: resolved.minIdleTimeMs,
  });
  const handler = new FailureHandler(writes, resolved, rt);
  return { handler, commands, logger, failed, deadLettered };
}

const held = (id: string, deliveries: number, fields: string[] | null = ['data', '{"n":1}']) =>
  new HeldEntry(id, fields, deliveries, { manualAck: async () => true });

describe('FailureHandler', () => {
  describe('retries', () => {
    it.each([
      // [deliveries, expected idle]: back-off retryBackoffMs × 2^(deliveries−1), capped at min-idle.
      [1, 30_000 - 1_000],
      [2, 30_000 - 2_000],
      [4, 30_000 - 8_000],
      [6, 0],
    ])('schedules delivery %i for a retry by backdating its idle time to %i ms', async (deliveries, idleMs) => {
      const { handler, commands, failed } = setup({ maxDeliveries: 10 });
      const entry = held('5-0', deliveries);
      commands.own(entry.id);
      await expect(handler.fail(entry, new Error('flaky'))).resolves.toBe('retry-scheduled');
      expect(commands.claims).toEqual([
        { stream: 'orders', group: 'billing', consumer: 'c1', idleMs, retryCount: -1, ids: ['5-0'] },
      ]);
      // The back-off is recorded with it, so that operators see the real idle time (30 s min-idle).
      expect(commands.backoffs).toEqual([['5-0', 30_000 - idleMs]]);
      expect(commands.parks).toEqual([]);
      expect(failed).toEqual(['5-0']);
    });

    it("sets a deferred entry's delivery count back and waits one back-off, even at the last delivery", async () => {
      const { handler, commands } = setup({ maxDeliveries: 3 }, 500);
      const last = held('7-0', 3);
      const first = held('8-0', 1);
      commands.own(last.id, first.id);
      await expect(handler.fail(last, new EventInProgressError('claimed elsewhere'))).resolves.toBe('retry-scheduled');
      // What Nest's RPC filters make of the error carries the marker too.
      await expect(handler.fail(first, { status: 'error', message: 'claimed elsewhere', deferred: true })).resolves.toBe(
        'retry-scheduled',
      );
      expect(commands.claims.map(({ idleMs, retryCount, ids }) => [ids[0], idleMs, retryCount])).toEqual([
        ['7-0', 29_500, 2],
        ['8-0', 29_500, 0],
      ]);
      expect(commands.parks).toEqual([]);
    });

    it('a short RetryLater at the last delivery is no failure: no error log, no failed event, the count set back', async () => {
      const { handler, commands, logger, failed } = setup({ maxDeliveries: 3 });
      const entry = held('11-0', 3);
      commands.own(entry.id);
      await expect(handler.fail(entry, new RetryLater(2_000))).resolves.toBe('retry-scheduled');
      const [claim] = commands.claims;
      expect(claim.retryCount).toBe(2);
      // Idle set so the reclaimer (min-idle 30 s) takes it after the 2 s asked for.
      expect(claim.idleMs).toBeGreaterThanOrEqual(30_000 - 2_000);
      expect(claim.idleMs).toBeLessThanOrEqual(30_000 - 1_900);
      expect([logger.error.mock.calls, failed, commands.parks]).toEqual([[], [], []]);
    });

    it('reports lost when another consumer owns the entry now', async () => {
      const { handler, commands, deadLettered } = setup();
      await expect(handler.fail(held('9-0', 1), new Error('x'))).resolves.toBe('lost');
      expect(commands.claims).toHaveLength(1);
      expect(deadLettered).toEqual([]);
    });

    it('parks a tombstone when the claim finds the payload trimmed', async () => {
      const { handler, commands, deadLettered } = setup();
      const entry = held('10-0', 1);
      commands.own(entry.id);
      commands.trimmed.add(entry.id);
      await expect(handler.fail(entry, new Error('x'))).resolves.toBe('parked');
      expect(commands.parks).toMatchObject([
        { id: '10-0', requireOwner: '0', meta: { 'dlq:reason': 'payload-trimmed' }, fallback: ['data', '{"n":1}'] },
      ]);
      expect(deadLettered).toEqual([{ id: '10-0', reason: DeadLetterReason.PAYLOAD_TRIMMED, deadLetterId: '1-0' }]);
    });

    it('leaves the entry pending when the claim script fails', async () => {
      const { handler, commands, logger } = setup();
      commands.failWith = new Error('connection reset');
      await expect(handler.fail(held('11-0', 1), new Error('x'))).resolves.toBe('left-pending');
      expect(logger.warn).toHaveBeenCalledWith(
        expect.stringContaining('Could not schedule the retry of entry 11-0: connection reset'),
      );
    });
  });

  describe('parking', () => {
    it('parks at maxDeliveries with the metadata and the held fields as fallback', async () => {
      const { handler, commands, deadLettered } = setup({ maxDeliveries: 3 });
      const entry = held('12-0', 3, ['data', '1', 'dlq:reason', 'producer field']);
      commands.own(entry.id);
      await expect(handler.fail(entry, new TypeError('bad state'))).resolves.toBe('parked');
      expect(commands.claims).toEqual([]);
      expect(commands.parks).toEqual([
        {
          stream: 'orders',
          dlq: 'orders:dlq',
          group: 'billing',
          consumer: 'c1',
          id: '12-0',
          requireOwner: '1',
          meta: expect.objectContaining({
            'dlq:reason': 'max-deliveries',
            'dlq:stream': 'orders',
            'dlq:id': '12-0',
            'dlq:group': 'billing',
            'dlq:consumer': 'c1',
            'dlq:error': 'bad state',
            'dlq:error_class': 'TypeError',
            'dlq:deliveries': '3',
          }),
          // A producer's own dlq:-named field is escaped so it cannot pass for metadata.
          fallback: ['data', '1', 'orig:dlq:reason', 'producer field'],
        },
      ]);
      expect(deadLettered).toEqual([{ id: '12-0', reason: DeadLetterReason.MAX_DELIVERIES, deadLetterId: '1-0' }]);
      expect(commands.owned.has('12-0')).toBe(false);
    });

    it("parks a NonRetryableError at its first delivery, and the plain object Nest's filters make of it", async () => {
      const { handler, commands } = setup();
      commands.own('13-0', '14-0');
      await expect(handler.fail(held('13-0', 1), new NonRetryableError('invalid order'))).resolves.toBe('parked');
      await expect(handler.fail(held('14-0', 1), { status: 'error', message: 'invalid', nonRetryable: true })).resolves.toBe(
        'parked',
      );
      expect(commands.parks.map((park) => [park.id, park.meta['dlq:reason'], park.requireOwner])).toEqual([
        ['13-0', 'non-retryable', '1'],
        ['14-0', 'non-retryable', '1'],
      ]);
      expect(commands.claims).toEqual([]);
    });

    it('reports lost when the park script finds another owner, and emits no dead-letter', async () => {
      const { handler, commands, deadLettered } = setup();
      await expect(handler.fail(held('15-0', 3), new Error('x'))).resolves.toBe('lost');
      await expect(handler.park(held('16-0', 1), DeadLetterReason.UNDECODABLE)).resolves.toBe('lost');
      expect(commands.parks.map((park) => park.id)).toEqual(['15-0', '16-0']);
      expect(deadLettered).toEqual([]);
    });

    it('parks an entry trimmed while held without an ownership check', async () => {
      const { handler, commands } = setup();
      const entry = held('17-0', 1);
      entry.trimmed = true;
      // Not in the fake PEL: Redis dropped it, so an ownership check could only fail.
      await expect(handler.fail(entry, new Error('x'))).resolves.toBe('parked');
      expect(commands.parks).toMatchObject([{ id: '17-0', requireOwner: '0', meta: { 'dlq:reason': 'payload-trimmed' } }]);
      expect(commands.claims).toEqual([]);
    });

    it('parks a payload-less entry with an empty fallback', async () => {
      const { handler, commands } = setup();
      await expect(handler.park(held('18-0', 2, null), DeadLetterReason.PAYLOAD_TRIMMED, undefined, false)).resolves.toBe(
        'parked',
      );
      expect(commands.parks).toMatchObject([
        { id: '18-0', requireOwner: '0', fallback: [], meta: { 'dlq:error': '', 'dlq:deliveries': '2' } },
      ]);
    });

    it('leaves the entry pending when the park script fails', async () => {
      const { handler, commands, logger, deadLettered } = setup();
      commands.own('19-0');
      commands.failWith = new Error('READONLY');
      await expect(handler.fail(held('19-0', 3), new Error('x'))).resolves.toBe('left-pending');
      expect(logger.error).toHaveBeenCalledWith(
        expect.stringContaining('Could not dead-letter entry 19-0 of stream "orders" (READONLY)'),
      );
      expect(deadLettered).toEqual([]);
    });
  });

  describe('entries not to be written from here', () => {
    it('lets a manual ack stand when the handler failed after it', async () => {
      const { handler, commands, logger, failed } = setup();
      const entry = held('20-0', 3);
      entry.acked = true;
      await expect(handler.fail(entry, new Error('after ack'))).resolves.toBe('acked');
      expect(commands.claims).toEqual([]);
      expect(commands.parks).toEqual([]);
      expect(failed).toEqual([]);
      expect(logger.error).toHaveBeenCalledWith(expect.stringContaining('The ack stands'));
    });

    it('reports an entry already known lost without calling a script', async () => {
      const { handler, commands, failed } = setup();
      const entry = held('21-0', 3);
      entry.markLost();
      await expect(handler.fail(entry, new Error('x'))).resolves.toBe('lost');
      expect(commands.claims).toEqual([]);
      expect(commands.parks).toEqual([]);
      expect(failed).toEqual(['21-0']);
    });
  });

  describe('release', () => {
    it('hands owned entries back at min-idle and parks those whose payload was trimmed', async () => {
      const { handler, commands, deadLettered } = setup();
      const kept = held('30-0', 1);
      const trimmed = held('31-0', 2, ['data', 'last copy']);
      const stolen = held('32-0', 1);
      for (const entry of [kept, trimmed, stolen]) entry.invoked = true;
      commands.own(kept.id, trimmed.id);
      commands.trimmed.add(trimmed.id);
      await handler.release([kept, trimmed, stolen]);
      expect(commands.claims).toEqual([
        { stream: 'orders', group: 'billing', consumer: 'c1', idleMs: 30_000, retryCount: -1, ids: ['30-0', '31-0', '32-0'] },
      ]);
      expect(commands.parks).toMatchObject([
        { id: '31-0', requireOwner: '0', meta: { 'dlq:reason': 'payload-trimmed' }, fallback: ['data', 'last copy'] },
      ]);
      expect(deadLettered.map((event) => event.id)).toEqual(['31-0']);
      expect(commands.owned.has('30-0')).toBe(true);
    });

    it('gives entries whose handler was never called the delivery count they had before this consumer took them', async () => {
      const { handler, commands } = setup();
      // Read for the first time (the read counted 1), never started: back to 0.
      const readAhead = held('40-0', 1);
      // Reclaimed with 2 deliveries and still to be counted on start: 2 (unchanged).
      const reclaimed = held('41-0', 2);
      reclaimed.countOnStart = true;
      // Reclaimed, counted on start (3), then queued behind its ordering key: back to 2.
      const queued = held('42-0', 3);
      // Its handler ran: the delivery happened, the count stays.
      const ran = held('43-0', 3);
      ran.invoked = true;
      commands.own('40-0', '41-0', '42-0', '43-0');
      await handler.release([readAhead, reclaimed, queued, ran]);
      expect(commands.claims.map(({ retryCount, ids }) => [retryCount, ids])).toEqual([
        [0, ['40-0']],
        [2, ['41-0', '42-0']],
        [-1, ['43-0']],
      ]);
    });

    it('logs and returns when the hand-back fails', async () => {
      const { handler, commands, logger } = setup();
      commands.failWith = new Error('closed');
      await expect(handler.release([held('33-0', 1), held('34-0', 1)])).resolves.toBeUndefined();
      expect(logger.warn).toHaveBeenCalledWith('Could not hand back 2 unfinished entries: closed');
    });
  });
});
