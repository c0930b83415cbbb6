import type { Logger } from '@nestjs/common';
import { TransportEvents } from '../events/transport-events.js';
import { PartitionFence } from '../ownership/partition-fence.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import { LeaseKeeper } from './lease-keeper.js';
import type { LeasedEntry, RecoveryTarget } from './recovery-target.interface.js';

// The lease keeper is driven against a consumer's held entries (a fake RecoveryTarget) and the
// two scripts it sends (claim-if-owned, plain and fenced), whose answers the test scripts. The
// clock is Jest's: a handler's running time is "now" minus its startedAt.

type ClaimAnswer = [lost: string[], trimmed: string[]] | null | Error;

class FakeRedis implements Pick<ScriptedRedis, 'nrsClaimIfOwned' | 'nrsClaimIfOwnedFenced'> {
  readonly sent: Array<{ command: string; args: unknown[] }> = [];
  /** Answers in order; past the end every id is still this consumer's. */
  readonly answers: ClaimAnswer[] = [];
  inFlight: Promise<void> = Promise.resolve();

  async nrsClaimIfOwned(...args: Parameters<ScriptedRedis['nrsClaimIfOwned']>): Promise<[string[], string[]]> {
    const answer = await this.answer('nrsClaimIfOwned', args);
    if (answer === null) throw new Error('the unfenced script never answers null');
    return answer;
  }

  async nrsClaimIfOwnedFenced(...args: Parameters<ScriptedRedis['nrsClaimIfOwnedFenced']>) {
    return this.answer('nrsClaimIfOwnedFenced', args);
  }

  /** The ids each call renewed, in order. */
  idsSent(): string[][] {
    return this.sent.map((s) => s.args.slice(s.command === 'nrsClaimIfOwned' ? 5 : 8) as string[]);
  }

  private async answer(command: string, args: unknown[]): Promise<[string[], string[]] | null> {
    this.sent.push({ command, args });
    await this.inFlight;
    const answer = this.answers.length > 0 ? this.answers.shift()! : [[], []];
    if (answer instanceof Error) throw answer;
    return answer as [string[], string[]] | null;
  }
}

class Entry implements LeasedEntry {
  leaseExpired = false;
  readonly aborted: string[] = [];
  constructor(
    readonly id: string,
    readonly startedAt: number,
    readonly deliveries = 1,
  ) {}
  abort(reason: string): void {
    this.aborted.push(reason);
  }
}

class FakeTarget implements RecoveryTarget {
  readonly options = { minIdleTimeMs: 30_000, maxHandlerMs: 10_000, deadLetterStream: 'orders:dlq' };
  /** What the consumer holds now. */
  entries: Entry[] = [];
  fence?: PartitionFence;
  readonly lost: string[] = [];
  readonly trimmed: string[] = [];
  readonly reclaimRoom = 0;
  readonly epoch = 1;

  constructor(
    readonly stream = 'orders',
    readonly group = 'billing',
    readonly consumer = 'c1',
  ) {}

  get heldCount(): number {
    return this.entries.length;
  }

  heldEntries(): Iterable<LeasedEntry> {
    return this.entries;
  }

  acceptClaimed(): Promise<number> {
    throw new Error('lease renewal never hands entries over');
  }

  tombstone(): Promise<void> {
    throw new Error('lease renewal writes no tombstone');
  }

  markLost(id: string): void {
    this.lost.push(id);
  }

  markTrimmed(id: string): void {
    this.trimmed.push(id);
  }
}

const START = 1_700_000_000_000;

function setup() {
  const redis = new FakeRedis();
  const target = new FakeTarget();
  const events = new TransportEvents();
  const renewed: number[] = [];
  const expired: Array<{ id: string; deliveries: number; runningMs: number; maxHandlerMs: number }> = [];
  events.on('lease-renewed', (e) => renewed.push(e.count));
  events.on('lease-expired', ({ id, deliveries, runningMs, maxHandlerMs }) =>
    expired.push({ id, deliveries, runningMs, maxHandlerMs }),
  );
  const logs: Array<[level: 'error' | 'warn', message: string]> = [];
  const logger: Pick<Logger, 'error' | 'warn'> = {
    error: (message: string) => void logs.push(['error', message]),
    warn: (message: string) => void logs.push(['warn', message]),
  };
  const keeper = new LeaseKeeper(target, redis as unknown as ScriptedRedis, events, logger as Logger);
  return { redis, target, keeper, renewed, expired, logs };
}

describe('LeaseKeeper', () => {
  beforeEach(() => jest.useFakeTimers({ now: START }));
  afterEach(() => jest.useRealTimers());

  it('sends nothing while the consumer holds nothing', async () => {
    const { redis, keeper, renewed } = setup();
    await keeper.renew();
    expect(redis.sent).toEqual([]);
    expect(renewed).toEqual([]);
  });

  it('re-claims every held entry to itself in one call, idle 0 and the delivery count untouched (-1)', async () => {
    const { redis, target, keeper, renewed } = setup();
    target.entries = [new Entry('1-0', START), new Entry('2-0', START - 5_000)];
    await keeper.renew();
    expect(redis.sent).toEqual([{ command: 'nrsClaimIfOwned', args: ['orders', 'billing', 'c1', 0, -1, '1-0', '2-0'] }]);
    expect(renewed).toEqual([2]);
  });

  it('renews an entry still waiting for a slot (startedAt 0) however long it has waited', async () => {
    const { redis, target, keeper, expired } = setup();
    target.entries = [new Entry('1-0', 0)];
    jest.advanceTimersByTime(60_000);
    await keeper.renew();
    expect(redis.idsSent()).toEqual([['1-0']]);
    expect(expired).toEqual([]);
  });

  it('renews a handler that has run exactly maxHandlerMs, and expires it one millisecond later', async () => {
    const { redis, target, keeper, expired } = setup();
    target.entries = [new Entry('1-0', START)];
    jest.advanceTimersByTime(10_000);
    await keeper.renew();
    expect(redis.idsSent()).toEqual([['1-0']]);
    jest.advanceTimersByTime(1);
    await keeper.renew();
    expect(expired).toEqual([{ id: '1-0', deliveries: 1, runningMs: 10_001, maxHandlerMs: 10_000 }]);
  });

  it('stops renewing a handler past maxHandlerMs: marks its lease expired, fires its abort signal, logs and emits once', async () => {
    const { redis, target, keeper, renewed, expired, logs } = setup();
    const hung = new Entry('1-0', START - 12_000, 3);
    const healthy = new Entry('2-0', START - 1_000);
    target.entries = [hung, healthy];
    await keeper.renew();
    expect(redis.idsSent()).toEqual([['2-0']]);
    expect(renewed).toEqual([1]);
    expect(hung.leaseExpired).toBe(true);
    expect(hung.aborted).toEqual(['Handler of entry 1-0 ran past maxHandlerMs (10000 ms); its lease expired.']);
    expect(expired).toEqual([{ id: '1-0', deliveries: 3, runningMs: 12_000, maxHandlerMs: 10_000 }]);
    expect(logs).toHaveLength(1);
    expect(logs[0][0]).toBe('error');
    expect(logs[0][1]).toContain('Handler of entry 1-0 of stream "orders" (group "billing") has run 12000 ms');
    expect(healthy.aborted).toEqual([]);

    // Later rounds leave it alone: no second abort, event or log line.
    await keeper.renew();
    expect(hung.aborted).toHaveLength(1);
    expect(expired).toHaveLength(1);
    expect(logs).toHaveLength(1);
    expect(redis.idsSent()[1]).toEqual(['2-0']);
  });

  it('sends nothing when every held entry has an expired lease', async () => {
    const { redis, target, keeper, renewed } = setup();
    const entry = new Entry('1-0', START);
    entry.leaseExpired = true;
    target.entries = [entry];
    await keeper.renew();
    expect(redis.sent).toEqual([]);
    expect(renewed).toEqual([]);
  });

  it('tells the consumer which entries were lost to another consumer and which were trimmed, and counts only the rest renewed', async () => {
    const { redis, target, keeper, renewed } = setup();
    target.entries = ['1-0', '2-0', '3-0', '4-0'].map((id) => new Entry(id, START));
    redis.answers.push([['2-0'], ['4-0']]);
    await keeper.renew();
    expect(target.lost).toEqual(['2-0']);
    expect(target.trimmed).toEqual(['4-0']);
    expect(renewed).toEqual([2]);
  });

  it('renews at most 1,000 ids per call, one lease-renewed event per call', async () => {
    const { redis, target, keeper, renewed } = setup();
    target.entries = Array.from({ length: 2_500 }, (_, i) => new Entry(`${i + 1}-0`, START));
    await keeper.renew();
    expect(redis.idsSent().map((ids) => ids.length)).toEqual([1_000, 1_000, 500]);
    expect(redis.idsSent()[1][0]).toBe('1001-0');
    expect(renewed).toEqual([1_000, 1_000, 500]);
  });

  it('runs one round at a time: a renew while one is in flight sends nothing', async () => {
    const { redis, target, keeper } = setup();
    target.entries = [new Entry('1-0', START)];
    let answer!: () => void;
    redis.inFlight = new Promise<void>((resolve) => (answer = resolve));
    const first = keeper.renew();
    await keeper.renew();
    expect(redis.sent).toHaveLength(1);
    answer();
    await first;
    await keeper.renew();
    expect(redis.sent).toHaveLength(2);
  });

  it('never throws: a failed call is logged as a warning, leaves the entries alone, and the next round runs', async () => {
    const { redis, target, keeper, renewed, logs } = setup();
    target.entries = Array.from({ length: 1_500 }, (_, i) => new Entry(`${i + 1}-0`, START));
    redis.answers.push(new Error("READONLY You can't write against a read only replica."));
    await expect(keeper.renew()).resolves.toBeUndefined();
    // The failure ends the round: the second chunk is not sent.
    expect(redis.sent).toHaveLength(1);
    expect(target.lost).toEqual([]);
    expect(renewed).toEqual([]);
    expect(logs).toEqual([
      ['warn', 'Lease renewal on stream "orders" group "billing" failed: READONLY You can\'t write against a read only replica.'],
    ]);
    await keeper.renew();
    expect(redis.sent).toHaveLength(3);
  });

  describe('under exclusive ownership', () => {
    function fenced(generation: string | null) {
      const context = setup();
      const fence = new PartitionFence('{orders}:nrs-owner:billing', 'c1#start');
      if (generation !== null) fence.grant(generation, performance.now(), 5_000);
      context.target.fence = fence;
      context.target.entries = [new Entry('1-0', START), new Entry('2-0', START)];
      return context;
    }

    it('sends nothing and marks nothing lost while no generation is held (the partition was given up or lost)', async () => {
      const { redis, target, keeper } = fenced(null);
      await keeper.renew();
      expect(redis.sent).toEqual([]);
      expect(target.lost).toEqual([]);
    });

    it("renews through the fenced script with the partition's owner key, member and generation", async () => {
      const { redis, keeper, renewed } = fenced('4');
      await keeper.renew();
      expect(redis.sent).toEqual([
        {
          command: 'nrsClaimIfOwnedFenced',
          args: ['orders', '{orders}:nrs-owner:billing', 'c1#start', '4', 'billing', 'c1', 0, -1, '1-0', '2-0'],
        },
      ]);
      expect(renewed).toEqual([2]);
    });

    it('renews even when the local lease has run out, as long as the generation is held (Redis decides)', async () => {
      const { redis, target, keeper } = fenced('4');
      jest.advanceTimersByTime(6_000);
      expect(target.fence!.held).toBe(false);
      await keeper.renew();
      expect(redis.sent).toHaveLength(1);
    });

    it('reads a refused generation as "nothing known yet": no entry marked lost, no event, no further chunk', async () => {
      const { redis, target, keeper, renewed, logs } = fenced('4');
      target.entries = Array.from({ length: 1_200 }, (_, i) => new Entry(`${i + 1}-0`, START));
      redis.answers.push(null);
      await keeper.renew();
      expect(redis.sent).toHaveLength(1);
      expect(target.lost).toEqual([]);
      expect(target.trimmed).toEqual([]);
      expect(renewed).toEqual([]);
      expect(logs).toEqual([]);
    });
  });
});
