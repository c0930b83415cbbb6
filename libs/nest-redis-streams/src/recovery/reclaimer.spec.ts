import type { Logger } from '@nestjs/common';
import { TransportEvents } from '../events/transport-events.js';
import { PartitionFence } from '../ownership/partition-fence.js';
import type { XAutoClaimJustIdReply } from '../redis/replies.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import { Reclaimer } from './reclaimer.js';
import type { LeasedEntry, RecoveryTarget } from './recovery-target.interface.js';

// The reclaimer is driven against fakes of what it depends on: a RecoveryTarget that records what
// it is handed, and the four Redis commands a round sends (XAUTOCLAIM, its fenced script, and the
// trim audit's two scripts), answering from a script of replies. What Redis itself does with
// those commands is tested against a real server in test/recovery/.

type ClaimReply = XAutoClaimJustIdReply | null | Error;

class FakeRedis implements Pick<
  ScriptedRedis,
  'nrsAutoClaimCounted' | 'nrsFencedAutoClaim' | 'nrsAuditTrimLoss' | 'nrsRepairEntriesRead'
> {
  readonly sent: Array<{ command: string; args: unknown[] }> = [];
  /** Answers of the claim calls (plain or fenced) in order; past the end, an empty last page. */
  readonly claims: ClaimReply[] = [];
  /** Runs while a claim call is in flight (before it answers). */
  duringClaim: () => void | Promise<void> = () => undefined;

  /** XAUTOCLAIM … JUSTID raising the claim epoch (recorded as `xautoclaim` with XAUTOCLAIM's argument order). */
  async nrsAutoClaimCounted(...args: Parameters<ScriptedRedis['nrsAutoClaimCounted']>) {
    const [stream, , group, consumer, minIdle, cursor, count] = args;
    return (await this.claim('xautoclaim', [stream, group, consumer, minIdle, cursor, 'COUNT', count, 'JUSTID']))!;
  }

  async nrsFencedAutoClaim(...args: Parameters<ScriptedRedis['nrsFencedAutoClaim']>) {
    return (await this.claim('nrsFencedAutoClaim', args)) as [string, unknown[], string[]?] | null;
  }

  async nrsAuditTrimLoss(...args: Parameters<ScriptedRedis['nrsAuditTrimLoss']>): Promise<0> {
    this.sent.push({ command: 'nrsAuditTrimLoss', args });
    return 0;
  }

  async nrsRepairEntriesRead(...args: Parameters<ScriptedRedis['nrsRepairEntriesRead']>): Promise<number> {
    this.sent.push({ command: 'nrsRepairEntriesRead', args });
    return 0;
  }

  commands(): string[] {
    return this.sent.map((s) => s.command);
  }

  private async claim(command: string, args: unknown[]): Promise<XAutoClaimJustIdReply | null> {
    this.sent.push({ command, args });
    await this.duringClaim();
    const lastPage: XAutoClaimJustIdReply = ['0-0', [], []];
    const reply = this.claims.length > 0 ? this.claims.shift()! : lastPage;
    if (reply instanceof Error) throw reply;
    return reply;
  }
}

class FakeTarget implements RecoveryTarget {
  readonly stream = 'orders';
  readonly group = 'billing';
  readonly consumer = 'c1';
  readonly options = { minIdleTimeMs: 30_000, maxHandlerMs: 60_000, deadLetterStream: 'orders:dlq' };
  fence?: PartitionFence;
  heldCount = 0;
  reclaimRoom = 100;
  epoch = 7;
  readonly accepted: Array<{ ids: string[]; epoch: number }> = [];
  readonly tombstoned: string[][] = [];
  /** What acceptClaimed answers; by default it takes every id (and the room shrinks by as many). */
  accept: (ids: string[]) => number | Promise<number> = (ids) => ids.length;

  heldEntries(): Iterable<LeasedEntry> {
    return [];
  }

  async acceptClaimed(ids: string[], epoch: number): Promise<number> {
    this.accepted.push({ ids: [...ids], epoch });
    const taken = await this.accept(ids);
    this.reclaimRoom -= taken;
    return taken;
  }

  async tombstone(ids: string[]): Promise<void> {
    this.tombstoned.push([...ids]);
  }

  markLost(): void {
    throw new Error('a reclaim round never marks an entry lost');
  }

  markTrimmed(): void {
    throw new Error('a reclaim round reports trimmed entries by tombstone, not markTrimmed');
  }
}

function setup(count = 10) {
  const redis = new FakeRedis();
  const target = new FakeTarget();
  const events = new TransportEvents();
  const reclaimed: Array<{ count: number; consumer: string }> = [];
  events.on('reclaimed', (e) => reclaimed.push({ count: e.count, consumer: e.consumer }));
  const logs: Array<[level: 'error' | 'warn', message: string]> = [];
  const logger: Pick<Logger, 'error' | 'warn' | 'log'> = {
    error: (message: string) => void logs.push(['error', message]),
    warn: (message: string) => void logs.push(['warn', message]),
    log: () => undefined,
  };
  const reclaimer = new Reclaimer(target, redis as unknown as ScriptedRedis, count, events, logger as Logger);
  return { redis, target, reclaimer, reclaimed, logs };
}

function heldFence(generation = '3'): PartitionFence {
  const fence = new PartitionFence('{orders}:nrs-owner:billing', 'c1#start');
  fence.grant(generation, performance.now(), 60_000);
  return fence;
}

describe('Reclaimer', () => {
  it('follows the XAUTOCLAIM cursor to 0-0 and hands every page to the target, without counting a delivery (JUSTID)', async () => {
    const { redis, target, reclaimer, reclaimed, logs } = setup();
    redis.claims.push(['5-0', ['1-0', '2-0']], ['0-0', ['5-0']]);
    await expect(reclaimer.run()).resolves.toBe(3);
    const claims = redis.sent.filter((s) => s.command === 'xautoclaim').map((s) => s.args);
    expect(claims).toEqual([
      ['orders', 'billing', 'c1', 30_000, '0-0', 'COUNT', 10, 'JUSTID'],
      ['orders', 'billing', 'c1', 30_000, '5-0', 'COUNT', 10, 'JUSTID'],
    ]);
    expect(target.accepted).toEqual([
      { ids: ['1-0', '2-0'], epoch: 7 },
      { ids: ['5-0'], epoch: 7 },
    ]);
    // One event and one log line for the whole round.
    expect(reclaimed).toEqual([{ count: 3, consumer: 'c1' }]);
    expect(logs).toEqual([['warn', 'Reclaimed 3 idle entries of stream "orders" group "billing".']]);
  });

  it('counts only what the target accepted, and stays quiet when it accepted nothing', async () => {
    const { redis, target, reclaimer, reclaimed, logs } = setup();
    redis.claims.push(['0-0', ['1-0', '2-0', '3-0']]);
    target.accept = () => 1;
    await expect(reclaimer.run()).resolves.toBe(1);
    expect(reclaimed).toEqual([{ count: 1, consumer: 'c1' }]);

    redis.claims.push(['0-0', ['4-0']]);
    target.accept = () => 0;
    logs.length = 0;
    await expect(reclaimer.run()).resolves.toBe(0);
    expect(reclaimed).toHaveLength(1);
    expect(logs).toEqual([]);
  });

  it('asks for no more than its per-call count or the room the target has left, whichever is less', async () => {
    const { redis, target, reclaimer } = setup(10);
    target.reclaimRoom = 4;
    redis.claims.push(['9-0', ['1-0', '2-0', '3-0']], ['0-0', ['9-0']]);
    await reclaimer.run();
    const counts = redis.sent.filter((s) => s.command === 'xautoclaim').map((s) => s.args[6]);
    // 4 (room) first, then 1: the three accepted ids used up three places.
    expect(counts).toEqual([4, 1]);
  });

  it('stops following the cursor once the target has no room, and claims nothing at all when it starts without room', async () => {
    const { redis, target, reclaimer } = setup(10);
    target.reclaimRoom = 2;
    redis.claims.push(['9-0', ['1-0', '2-0']], ['0-0', ['9-0']]);
    await expect(reclaimer.run()).resolves.toBe(2);
    expect(redis.commands().filter((c) => c === 'xautoclaim')).toHaveLength(1);

    redis.sent.length = 0;
    await expect(reclaimer.run()).resolves.toBe(0);
    expect(redis.commands()).not.toContain('xautoclaim');
    // The round's trim audit still runs.
    expect(redis.commands()).toEqual(['nrsAuditTrimLoss', 'nrsRepairEntriesRead']);
  });

  it('hands each page over with the epoch read before its claim was sent, so the target can refuse a claim issued under an older one', async () => {
    const { redis, target, reclaimer } = setup();
    redis.claims.push(['5-0', ['1-0']], ['0-0', ['5-0']]);
    // A hand-over or a new generation while the second claim is in flight.
    let calls = 0;
    redis.duringClaim = () => {
      if (++calls === 2) target.epoch = 8;
    };
    await reclaimer.run();
    expect(target.accepted.map((a) => a.epoch)).toEqual([7, 7]);
  });

  it('writes tombstones for the ids Redis reports deleted (trimmed while pending) before handing over the rest', async () => {
    const { redis, target, reclaimer, logs } = setup();
    const order: string[] = [];
    target.accept = (ids) => (order.push('accept'), ids.length);
    const tombstone = target.tombstone.bind(target);
    target.tombstone = (ids) => (order.push('tombstone'), tombstone(ids));
    redis.claims.push(['0-0', ['2-0'], ['1-0', '3-0']]);
    await expect(reclaimer.run()).resolves.toBe(1);
    expect(target.tombstoned).toEqual([['1-0', '3-0']]);
    expect(order).toEqual(['tombstone', 'accept']);
    expect(logs[0][0]).toBe('error');
    expect(logs[0][1]).toContain('2 pending entries of stream "orders" group "billing" had been trimmed away');
    expect(logs[0][1]).toContain('1-0, 3-0');
  });

  it('writes no tombstone for a reply without deleted ids (Redis 6.2 answers two elements)', async () => {
    const { redis, target, reclaimer } = setup();
    redis.claims.push(['0-0', ['1-0']], ['0-0', [], []]);
    await reclaimer.run();
    await reclaimer.run();
    expect(target.tombstoned).toEqual([]);
  });

  it('audits the stream for trim loss after the claims of every round', async () => {
    const { redis, reclaimer } = setup();
    redis.claims.push(['0-0', ['1-0']]);
    await reclaimer.run();
    expect(redis.commands()).toEqual(['xautoclaim', 'nrsAuditTrimLoss', 'nrsRepairEntriesRead']);
  });

  it('runs one round at a time: a run while one is in flight claims nothing and resolves 0; idle() waits for the one in flight', async () => {
    const { redis, reclaimer } = setup();
    let answer!: () => void;
    redis.duringClaim = () => new Promise<void>((resolve) => (answer = resolve));
    redis.claims.push(['0-0', ['1-0']]);
    const first = reclaimer.run();
    await expect(reclaimer.run()).resolves.toBe(0);
    let idle = false;
    const waiting = reclaimer.idle().then(() => (idle = true));
    await Promise.resolve();
    expect(idle).toBe(false);
    answer();
    await expect(first).resolves.toBe(1);
    await waiting;
    expect(redis.commands().filter((c) => c === 'xautoclaim')).toHaveLength(1);
    // The round is over: the next run claims again.
    redis.duringClaim = () => undefined;
    await reclaimer.run();
    expect(redis.commands().filter((c) => c === 'xautoclaim')).toHaveLength(2);
  });

  it('idle() resolves at once when no round runs', async () => {
    const { reclaimer } = setup();
    await expect(reclaimer.idle()).resolves.toBeUndefined();
  });

  it('never throws: a failed claim is logged, counts 0, skips the audit, and the next round runs again', async () => {
    const { redis, target, reclaimer, reclaimed, logs } = setup();
    redis.claims.push(['5-0', ['1-0']], new Error('LOADING Redis is loading'));
    await expect(reclaimer.run()).resolves.toBe(0);
    // The first page was handed over before the failure, but the round reports nothing.
    expect(target.accepted).toHaveLength(1);
    expect(reclaimed).toEqual([]);
    expect(logs).toEqual([['error', 'Reclaim of stream "orders" group "billing" failed: LOADING Redis is loading']]);
    expect(redis.commands()).not.toContain('nrsAuditTrimLoss');

    redis.claims.push(['0-0', ['7-0']]);
    await expect(reclaimer.run()).resolves.toBe(1);
  });

  it('never throws when the target fails to take the claimed ids', async () => {
    const { redis, target, reclaimer, logs } = setup();
    redis.claims.push(['0-0', ['1-0']]);
    target.accept = () => Promise.reject(new Error('closed'));
    await expect(reclaimer.run()).resolves.toBe(0);
    expect(logs).toEqual([['error', 'Reclaim of stream "orders" group "billing" failed: closed']]);
  });

  describe('under exclusive ownership', () => {
    it('sends nothing at all (no claim, no audit) while the partition is not held', async () => {
      const { redis, target, reclaimer } = setup();
      target.fence = new PartitionFence('{orders}:nrs-owner:billing', 'c1#start');
      await expect(reclaimer.run()).resolves.toBe(0);
      expect(redis.sent).toEqual([]);
    });

    it('sends nothing once the local lease has run out, even with the generation still set', async () => {
      jest.useFakeTimers();
      try {
        const { redis, target, reclaimer } = setup();
        target.fence = heldFence();
        jest.advanceTimersByTime(60_000);
        expect(target.fence.generation).toBe('3');
        await expect(reclaimer.run()).resolves.toBe(0);
        expect(redis.sent).toEqual([]);
      } finally {
        jest.useRealTimers();
      }
    });

    it("claims through the fenced script with the partition's owner key, member and generation", async () => {
      const { redis, target, reclaimer } = setup();
      target.fence = heldFence('3');
      redis.claims.push(['0-0', ['1-0']]);
      await expect(reclaimer.run()).resolves.toBe(1);
      expect(redis.commands()).not.toContain('xautoclaim');
      expect(redis.sent[0]).toEqual({
        command: 'nrsFencedAutoClaim',
        args: [
          'orders',
          '{orders}:nrs-claims:billing',
          '{orders}:nrs-owner:billing',
          'c1#start',
          '3',
          'billing',
          'c1',
          30_000,
          '0-0',
          10,
          '1',
        ],
      });
    });

    it('ends the round when Redis refuses the generation (null), handing nothing over', async () => {
      const { redis, target, reclaimer, reclaimed } = setup();
      target.fence = heldFence();
      redis.claims.push(null);
      await expect(reclaimer.run()).resolves.toBe(0);
      expect(target.accepted).toEqual([]);
      expect(reclaimed).toEqual([]);
    });

    it('sends no further claim once the partition is given up between two pages', async () => {
      const { redis, target, reclaimer } = setup();
      const fence = heldFence();
      target.fence = fence;
      redis.claims.push(['5-0', ['1-0']], ['0-0', ['5-0']]);
      target.accept = (ids) => (fence.revoke(), ids.length);
      await expect(reclaimer.run()).resolves.toBe(1);
      expect(redis.commands().filter((c) => c === 'nrsFencedAutoClaim')).toHaveLength(1);
    });
  });
});
