import type { Logger } from '@nestjs/common';
import { TransportEvents } from '../events/transport-events.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import type { OwnedPartition } from './owned-partition.interface.js';
import { OwnershipCoordinator, type OwnershipScope } from './ownership-coordinator.js';
import { PartitionFence } from './partition-fence.js';

// The coordinator is driven against fakes: OwnedPartitions that record what they are told, and an
// in-memory model of the ownership scripts that follows their contract (see the headers in
// redis/lua/ownership.ts: heartbeat → live members; claim '' takes a free or expired partition with
// generation + 1; claim <gen> renews only the holder of that generation; release frees it). How
// Redis runs those scripts is tested against a real server in test/ownership/. Redis' clock is
// Jest's fake clock, so leases run out as the test advances time.

interface OwnerRow {
  owner: string;
  gen: number;
  until: number;
}

class FakeOwnershipRedis implements Pick<ScriptedRedis, 'nrsOwnHeartbeat' | 'nrsOwnClaim' | 'nrsOwnRelease'> {
  readonly rows = new Map<string, OwnerRow>();
  /** Live members other than the ones that sent a heartbeat here. */
  others: string[] = [];
  readonly sent: Array<{ command: string; args: unknown[] }> = [];
  /** The next call of a command fails with this error. */
  readonly failNext = new Map<string, Error>();
  /** How long every answer takes (fake time). */
  latencyMs = 0;
  /** Runs when a command arrives, before it is answered (another instance acting meanwhile). */
  onCommand: (command: string, args: unknown[]) => void = () => undefined;
  private readonly joined = new Set<string>();

  async nrsOwnHeartbeat(...args: Parameters<ScriptedRedis['nrsOwnHeartbeat']>): Promise<[number, string[]]> {
    const [, member, , join] = args;
    await this.arrive('nrsOwnHeartbeat', args);
    if (join === '1') this.joined.add(member);
    else this.joined.delete(member);
    return [Date.now(), [...this.joined, ...this.others].sort()];
  }

  /** ioredis overloads HMGET; the coordinator reads owner, gen and until. */
  async hmget(key: string, ...fields: string[]): Promise<Array<string | null>> {
    await this.arrive('hmget', [key, ...fields]);
    const row = this.rows.get(key);
    return row ? [row.owner, String(row.gen), String(row.until)] : [null, null, null];
  }

  async nrsOwnClaim(...args: Parameters<ScriptedRedis['nrsOwnClaim']>): Promise<[number, number, string]> {
    const [key, member, leaseMs, generation] = args;
    await this.arrive('nrsOwnClaim', args);
    const row = this.rows.get(key) ?? { owner: '', gen: 0, until: 0 };
    const now = Date.now();
    if (generation !== '') {
      if (row.owner !== member || String(row.gen) !== generation) return [0, row.gen, row.owner];
      row.until = now + leaseMs;
      return [1, row.gen, member];
    }
    if (row.owner !== '' && row.until >= now) return [0, row.gen, row.owner];
    this.rows.set(key, { owner: member, gen: row.gen + 1, until: now + leaseMs });
    return [1, row.gen + 1, member];
  }

  async nrsOwnRelease(...args: Parameters<ScriptedRedis['nrsOwnRelease']>): Promise<number> {
    const [key, member, generation] = args;
    await this.arrive('nrsOwnRelease', args);
    const row = this.rows.get(key);
    if (!row || row.owner !== member || String(row.gen) !== generation) return 0;
    row.owner = '';
    row.until = 0;
    return 1;
  }

  /** The calls of one command, by their arguments. */
  calls(command: string): unknown[][] {
    return this.sent.filter((s) => s.command === command).map((s) => s.args);
  }

  private async arrive(command: string, args: unknown[]): Promise<void> {
    this.sent.push({ command, args });
    if (this.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, this.latencyMs));
    this.onCommand(command, args);
    const error = this.failNext.get(command);
    if (error) {
      this.failNext.delete(command);
      throw error;
    }
  }
}

class FakePartition implements OwnedPartition {
  readonly stream: string;
  readonly fence: PartitionFence;
  /** What the coordinator told this partition, in order. */
  readonly told: string[] = [];
  private finishHandOver: (() => void) | null = null;
  private failHandOver: ((err: Error) => void) | null = null;

  constructor(
    readonly partition: number,
    member: string,
  ) {
    this.stream = `orders:{orders:${partition}}`;
    this.fence = new PartitionFence(`owner:${partition}`, member);
  }

  acquired(): void {
    this.told.push(`acquired ${this.fence.generation}`);
  }

  handOver(): Promise<void> {
    this.told.push('handOver');
    return new Promise<void>((resolve, reject) => {
      this.finishHandOver = resolve;
      this.failHandOver = reject;
    });
  }

  lost(): void {
    this.told.push('lost');
  }

  /** The consumer has nothing held any more: the hand-over is done. */
  handedOver(): void {
    this.finishHandOver?.();
  }

  /** The consumer's hand-over threw (e.g. its ack drain failed). */
  handOverFailed(err: Error): void {
    this.failHandOver?.(err);
  }
}

const SCOPE: OwnershipScope = {
  stream: 'orders',
  group: 'billing',
  consumer: 'c1',
  member: 'c1#a',
  membersKey: 'members',
  leaseMs: 900,
};
/** A third of the lease. */
const ROUND_MS = 300;

function setup(partitionCount = 4, scope: OwnershipScope = SCOPE) {
  const redis = new FakeOwnershipRedis();
  const partitions = Array.from({ length: partitionCount }, (_, i) => new FakePartition(i, scope.member));
  const events = new TransportEvents();
  const seen: string[] = [];
  events.on('partition-assigned', (e) => seen.push(`assigned ${e.partition} gen ${e.generation}`));
  events.on('partition-revoked', (e) => seen.push(`revoked ${e.partition} gen ${e.generation} ${e.reason}`));
  events.on('rebalanced', (e) => seen.push(`rebalanced [${e.owned.join(',')}] of ${e.members}`));
  const logs: Array<[level: 'warn' | 'log', message: string]> = [];
  const logger: Pick<Logger, 'warn' | 'log'> = {
    warn: (message: string) => void logs.push(['warn', message]),
    log: (message: string) => void logs.push(['log', message]),
  };
  const coordinator = new OwnershipCoordinator(redis as unknown as ScriptedRedis, scope, partitions, events, logger as Logger);
  return { redis, partitions, coordinator, seen, logs };
}

/** Lets the fake clock run, settling promises between timers (rounds, latency). */
const elapse = (ms: number) => jest.advanceTimersByTimeAsync(ms);

describe('OwnershipCoordinator', () => {
  beforeEach(() => jest.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => jest.useRealTimers());

  describe('grant', () => {
    it('owns every partition of a lone instance before start() resolves, under generation 1, and tells each partition once', async () => {
      const { redis, partitions, coordinator, seen, logs } = setup();
      await coordinator.start();
      expect(redis.calls('nrsOwnHeartbeat')).toEqual([['members', 'c1#a', 900, '1']]);
      expect(redis.calls('nrsOwnClaim')).toEqual([0, 1, 2, 3].map((p) => [`owner:${p}`, 'c1#a', 900, '']));
      for (const p of partitions) {
        expect(p.fence.generation).toBe('1');
        expect(p.fence.held).toBe(true);
        expect(p.told).toEqual(['acquired 1']);
      }
      expect(coordinator.ownedPartitions()).toEqual([0, 1, 2, 3]);
      expect(seen).toEqual([
        'assigned 0 gen 1',
        'assigned 1 gen 1',
        'assigned 2 gen 1',
        'assigned 3 gen 1',
        'rebalanced [0,1,2,3] of 1',
      ]);
      expect(coordinator.rebalances).toBe(1);
      expect(logs).toEqual([
        ['log', 'Consumer "c1" owns partitions [0, 1, 2, 3] of stream "orders" group "billing" (1 instance in the group).'],
      ]);
      await coordinator.stop();
    });

    it('records what the round saw for health: members, and per partition its owner, generation and whether it is mine', async () => {
      const { redis, coordinator } = setup(2);
      redis.others = ['c2#b'];
      redis.rows.set('owner:1', { owner: 'c2#b', gen: 6, until: Date.now() + 5_000 });
      await coordinator.run();
      expect(coordinator.view.members).toEqual(['c1#a', 'c2#b']);
      expect(coordinator.view.at).toBe(Date.now());
      expect(coordinator.view.partitions).toEqual([
        { partition: 0, stream: 'orders:{orders:0}', owner: 'c1#a', generation: 1, mine: true },
        { partition: 1, stream: 'orders:{orders:1}', owner: 'c2#b', generation: 6, mine: false },
      ]);
    });

    it('claims only the free partitions the shared assignment gives it, leaving the others to the other member', async () => {
      const { redis, partitions, coordinator } = setup();
      redis.others = ['c2#b'];
      await coordinator.run();
      // Four free partitions over two members, spread round-robin: 0 and 2 are c1#a's.
      expect(coordinator.ownedPartitions()).toEqual([0, 2]);
      expect(redis.calls('nrsOwnClaim').map(([key]) => key)).toEqual(['owner:0', 'owner:2']);
      expect(partitions[1].told).toEqual([]);
    });

    it("takes over a partition whose owner's lease ran out, with the next generation (fencing the old owner)", async () => {
      const { redis, partitions, coordinator, seen } = setup(1);
      redis.rows.set('owner:0', { owner: 'c9#dead', gen: 4, until: Date.now() - 1 });
      await coordinator.run();
      expect(partitions[0].fence.generation).toBe('5');
      expect(partitions[0].told).toEqual(['acquired 5']);
      expect(seen).toContain('assigned 0 gen 5');
    });

    it('leaves alone a partition another instance holds under a live lease, even one that is no member any more', async () => {
      const { redis, partitions, coordinator } = setup(1);
      redis.rows.set('owner:0', { owner: 'c9#gone', gen: 4, until: Date.now() + 100 });
      await coordinator.run();
      expect(redis.calls('nrsOwnClaim')).toEqual([]);
      expect(partitions[0].fence.generation).toBeNull();
      await elapse(101);
      await coordinator.run();
      expect(partitions[0].fence.generation).toBe('5');
    });

    it('tells nothing and grants nothing when another instance claimed the partition first', async () => {
      const { redis, partitions, coordinator, seen } = setup(1);
      redis.onCommand = (command) => {
        if (command === 'nrsOwnClaim') redis.rows.set('owner:0', { owner: 'c2#b', gen: 1, until: Date.now() + 900 });
      };
      await coordinator.run();
      expect(partitions[0].fence.generation).toBeNull();
      expect(partitions[0].told).toEqual([]);
      expect(seen).toEqual([]);
      expect(coordinator.rebalances).toBe(0);
    });
  });

  describe('renew and lease timing', () => {
    it('runs a round every third of the lease, renewing each held partition under the generation it holds', async () => {
      const { redis, partitions, coordinator, seen } = setup(2);
      await coordinator.start();
      redis.sent.length = 0;
      await elapse(ROUND_MS - 1);
      expect(redis.sent).toEqual([]);
      await elapse(1);
      expect(redis.calls('nrsOwnHeartbeat')).toHaveLength(1);
      expect(redis.calls('nrsOwnClaim')).toEqual([
        ['owner:0', 'c1#a', 900, '1'],
        ['owner:1', 'c1#a', 900, '1'],
      ]);
      await elapse(ROUND_MS * 3);
      expect(redis.calls('nrsOwnHeartbeat')).toHaveLength(4);
      // Renewals are not news: nothing is told, assigned or rebalanced again.
      expect(partitions.map((p) => p.told)).toEqual([['acquired 1'], ['acquired 1']]);
      expect(seen.filter((s) => s.startsWith('rebalanced'))).toHaveLength(1);
      expect(coordinator.rebalances).toBe(1);
      await coordinator.stop();
    });

    it('runs rounds no more often than every 50 ms, however short the lease', async () => {
      const { redis, coordinator } = setup(1, { ...SCOPE, leaseMs: 90 });
      await coordinator.start();
      await elapse(200);
      expect(redis.calls('nrsOwnHeartbeat')).toHaveLength(1 + 4);
      await coordinator.stop();
    });

    it("keeps the partition's local lease for leaseMs from when the renewal was sent, not from when it was answered", async () => {
      const { redis, partitions, coordinator } = setup(1);
      await coordinator.run();
      redis.latencyMs = 100;
      const sentAt = Date.now();
      const round = coordinator.run();
      await elapse(3 * 100);
      await round;
      // The renewal was sent 100 ms (one heartbeat, one read) into the round and answered 100 ms later.
      const renewalSentAt = sentAt + 200;
      await elapse(renewalSentAt + 900 - 1 - Date.now());
      expect(partitions[0].fence.held).toBe(true);
      await elapse(1);
      expect(partitions[0].fence.held).toBe(false);
    });

    it('does one round at a time: run() while a round is in flight joins it', async () => {
      const { redis, coordinator } = setup(1);
      redis.latencyMs = 50;
      const first = coordinator.run();
      const second = coordinator.run();
      await elapse(500);
      await Promise.all([first, second]);
      expect(redis.calls('nrsOwnHeartbeat')).toHaveLength(1);
    });
  });

  describe('Redis errors', () => {
    it('never throws from a round: a failed heartbeat is logged and the partitions held are left as they are', async () => {
      const { redis, partitions, coordinator, seen, logs } = setup(1);
      await coordinator.run();
      redis.failNext.set('nrsOwnHeartbeat', new Error('connection lost'));
      await expect(coordinator.run()).resolves.toBeUndefined();
      expect(logs.at(-1)).toEqual([
        'warn',
        'Ownership round of stream "orders" group "billing" failed (connection lost); partitions held here stop being read ' +
          'once their lease runs out, and the next round tries again.',
      ]);
      expect(partitions[0].fence.generation).toBe('1');
      expect(partitions[0].told).toEqual(['acquired 1']);
      expect(seen.some((s) => s.startsWith('revoked'))).toBe(false);
    });

    it('lets the local lease run out while renewals fail, and renews the same generation once Redis answers again (nothing lost)', async () => {
      const { redis, partitions, coordinator, seen } = setup(1);
      await coordinator.start();
      const failing = new Error('ETIMEDOUT');
      redis.onCommand = (command) => {
        if (command === 'nrsOwnHeartbeat') redis.failNext.set('nrsOwnHeartbeat', failing);
      };
      await elapse(900);
      expect(partitions[0].fence.held).toBe(false);
      expect(partitions[0].fence.generation).toBe('1');
      // Redis back before another instance took the partition: the hold is renewed as it was.
      redis.onCommand = () => undefined;
      await elapse(ROUND_MS);
      expect(partitions[0].fence.held).toBe(true);
      expect(partitions[0].fence.generation).toBe('1');
      expect(partitions[0].told).toEqual(['acquired 1']);
      expect(seen.filter((s) => s.startsWith('revoked'))).toEqual([]);
      await coordinator.stop();
    });

    it('a failed renewal of one partition fails the round but still renews the others, and loses none', async () => {
      const { redis, partitions, coordinator, logs } = setup(2);
      await coordinator.run();
      await elapse(500);
      redis.onCommand = (command, args) => {
        if (command === 'nrsOwnClaim' && args[0] === 'owner:0') redis.failNext.set('nrsOwnClaim', new Error('OOM'));
      };
      await coordinator.run();
      expect(logs.at(-1)?.[1]).toContain('failed (OOM)');
      // Partition 1 was renewed (its lease counts from this round); partition 0 kept its old one.
      await elapse(600);
      expect(partitions.map((p) => p.fence.held)).toEqual([false, true]);
      expect(partitions.map((p) => p.told)).toEqual([['acquired 1'], ['acquired 1']]);
    });
  });

  describe('lose', () => {
    it('revokes the fence, tells the partition it was lost and reports it when Redis refuses the renewal', async () => {
      const { redis, partitions, coordinator, seen, logs } = setup(3);
      await coordinator.run();
      seen.length = 0;
      // Another instance took partition 1 (its lease here ran out unseen).
      redis.rows.set('owner:1', { owner: 'c2#b', gen: 2, until: Date.now() + 5_000 });
      await coordinator.run();
      expect(partitions[1].fence.generation).toBeNull();
      expect(partitions[1].told).toEqual(['acquired 1', 'lost']);
      expect(seen).toEqual(['revoked 1 gen 1 lost', 'rebalanced [0,2] of 1']);
      expect(logs).toContainEqual([
        'warn',
        'Lost partition "orders:{orders:1}" of group "billing" (generation 1): its lease ran out and another instance may own it. ' +
          'Nothing of it is read, run or written from here any more.',
      ]);
      // It is not claimed back while the other instance's lease lasts.
      await coordinator.run();
      expect(partitions[1].told).toEqual(['acquired 1', 'lost']);
    });

    it('ignores a renewal answer that comes back after the partition was released meanwhile', async () => {
      const { redis, partitions, coordinator, seen } = setup(1);
      await coordinator.run();
      seen.length = 0;
      redis.onCommand = (command) => {
        if (command !== 'nrsOwnClaim') return;
        // Released by this instance while the renewal was in flight; the answer is a refusal.
        partitions[0].fence.revoke();
        redis.rows.set('owner:0', { owner: '', gen: 1, until: 0 });
      };
      await coordinator.run();
      expect(partitions[0].told).toEqual(['acquired 1']);
      expect(seen.filter((s) => s.startsWith('revoked'))).toEqual([]);
    });
  });

  describe('hand-over on a membership change', () => {
    async function joinedBySecondMember() {
      const context = setup();
      await context.coordinator.start();
      context.seen.length = 0;
      context.redis.others = ['c2#b'];
      await elapse(ROUND_MS);
      return context;
    }

    it('starts the hand-over of exactly the surplus when a member joins, and keeps renewing those partitions meanwhile', async () => {
      const { redis, partitions, coordinator } = await joinedBySecondMember();
      expect(partitions.map((p) => p.told)).toEqual([
        ['acquired 1'],
        ['acquired 1'],
        ['acquired 1', 'handOver'],
        ['acquired 1', 'handOver'],
      ]);
      redis.sent.length = 0;
      await elapse(ROUND_MS);
      // Still renewed while handing over (its acks go out under this generation), and not asked twice.
      expect(redis.calls('nrsOwnClaim').map(([key]) => key)).toEqual(['owner:0', 'owner:1', 'owner:2', 'owner:3']);
      expect(partitions[2].told).toEqual(['acquired 1', 'handOver']);
      expect(redis.calls('nrsOwnRelease')).toEqual([]);
      expect(coordinator.ownedPartitions()).toEqual([0, 1, 2, 3]);
      await coordinator.stop();
    });

    it('releases a partition under its generation once its hand-over is done, and reports it revoked for a rebalance', async () => {
      const { redis, partitions, coordinator, seen } = await joinedBySecondMember();
      partitions[2].handedOver();
      await elapse(0);
      expect(redis.calls('nrsOwnRelease')).toEqual([['owner:2', 'c1#a', '1']]);
      expect(partitions[2].fence.generation).toBeNull();
      expect(redis.rows.get('owner:2')).toEqual({ owner: '', gen: 1, until: 0 });
      expect(seen).toEqual(['revoked 2 gen 1 rebalance', 'rebalanced [0,1,3] of 2']);
      expect(coordinator.ownedPartitions()).toEqual([0, 1, 3]);
      await coordinator.stop();
    });

    // Found by this spec: a hand-over that finishes between two rounds (the usual case while a
    // handler runs) is released outside any round; the next round started from the smaller set
    // and reported nothing (no event, log line, `rebalances` or partitions-owned gauge).
    it('reports the smaller set of partitions (rebalanced) after a hand-over that finished between rounds', async () => {
      const { partitions, coordinator, seen } = await joinedBySecondMember();
      const rebalancesBefore = coordinator.rebalances;
      partitions[2].handedOver();
      partitions[3].handedOver();
      await elapse(ROUND_MS);
      expect(coordinator.ownedPartitions()).toEqual([0, 1]);
      expect(seen).toContain('rebalanced [0,1] of 2');
      expect(coordinator.rebalances).toBe(rebalancesBefore + 1);
      await coordinator.stop();
    });

    it('says when a hand-over fails, keeps the partition renewed and starts the hand-over again next round', async () => {
      const { redis, partitions, coordinator, logs } = await joinedBySecondMember();
      partitions[2].handOverFailed(new Error('ack drain failed'));
      await elapse(0);
      expect(logs.filter(([level]) => level === 'warn').map(([, message]) => message)).toEqual([
        expect.stringContaining('Handing partition "orders:{orders:2}" of group "billing" over failed (ack drain failed)'),
      ]);
      expect(redis.calls('nrsOwnRelease')).toEqual([]);
      redis.sent.length = 0;
      await elapse(ROUND_MS);
      expect(redis.calls('nrsOwnClaim').map(([key]) => key)).toContain('owner:2');
      expect(partitions[2].told).toEqual(['acquired 1', 'handOver', 'handOver']);
      expect(coordinator.ownedPartitions()).toEqual([0, 1, 2, 3]);
      await coordinator.stop();
    });

    it('leaves the released partitions to the new member: they are not claimed back', async () => {
      const { redis, partitions, coordinator } = await joinedBySecondMember();
      partitions[2].handedOver();
      partitions[3].handedOver();
      await elapse(0);
      redis.sent.length = 0;
      await elapse(ROUND_MS);
      expect(redis.calls('nrsOwnClaim').map(([key]) => key)).toEqual(['owner:0', 'owner:1']);
      await coordinator.stop();
    });

    it('takes back its share when a member leaves: the departed member’s partitions, once free, are claimed', async () => {
      const { redis, partitions, coordinator, seen } = await joinedBySecondMember();
      partitions[2].handedOver();
      partitions[3].handedOver();
      await elapse(0);
      // c2#b claimed them, then died: it leaves the members and its leases run out.
      for (const p of [2, 3]) redis.rows.set(`owner:${p}`, { owner: 'c2#b', gen: 2, until: Date.now() + 100 });
      redis.others = [];
      seen.length = 0;
      await elapse(ROUND_MS);
      expect(coordinator.ownedPartitions()).toEqual([0, 1, 2, 3]);
      expect(partitions[2].told).toEqual(['acquired 1', 'handOver', 'acquired 3']);
      expect(seen).toEqual(['assigned 2 gen 3', 'assigned 3 gen 3', 'rebalanced [0,1,2,3] of 1']);
      await coordinator.stop();
    });
  });

  describe('shutdown', () => {
    it('stopClaiming(): claims nothing more and starts no hand-over, but keeps renewing', async () => {
      const { redis, partitions, coordinator } = setup(3);
      redis.rows.set('owner:2', { owner: 'c9#dead', gen: 1, until: Date.now() + 100 });
      await coordinator.start();
      coordinator.stopClaiming();
      // Partition 2 is free now and assigned here: it would be claimed.
      await elapse(ROUND_MS);
      expect(partitions[2].told).toEqual([]);
      // Three members: partition 1 goes to another one: it would be handed over.
      redis.others = ['c2#b', 'c3#c'];
      await elapse(ROUND_MS);
      expect(partitions.map((p) => p.told)).toEqual([['acquired 1'], ['acquired 1'], []]);
      expect(partitions.map((p) => p.fence.held)).toEqual([true, true, false]);
      const claims = redis.calls('nrsOwnClaim');
      expect(claims.filter(([, , , generation]) => generation === '')).toHaveLength(2);
      expect(claims.filter(([key, , , generation]) => key === 'owner:1' && generation === '1')).toHaveLength(2);
      await coordinator.stop();
    });

    it('stop(): waits for the round in flight, releases every partition held, leaves the group and runs no more rounds', async () => {
      const { redis, partitions, coordinator, seen } = setup(3);
      await coordinator.start();
      partitions[1].fence.revoke(); // e.g. lost: nothing to release
      seen.length = 0;
      redis.latencyMs = 10;
      await elapse(ROUND_MS);
      const stopping = coordinator.stop();
      await elapse(100);
      await stopping;
      const released = redis.calls('nrsOwnRelease');
      expect(released).toEqual([
        ['owner:0', 'c1#a', '1'],
        ['owner:2', 'c1#a', '1'],
      ]);
      expect(redis.calls('nrsOwnHeartbeat').at(-1)).toEqual(['members', 'c1#a', 900, '0']);
      expect(partitions.map((p) => p.fence.generation)).toEqual([null, null, null]);
      expect(seen.filter((s) => s.startsWith('revoked'))).toEqual(['revoked 0 gen 1 shutdown', 'revoked 2 gen 1 shutdown']);
      const sent = redis.sent.length;
      await elapse(ROUND_MS * 5);
      expect(redis.sent).toHaveLength(sent);
    });

    it('stop() ends even when Redis refuses the release and the leave', async () => {
      const { redis, partitions, coordinator, seen } = setup(1);
      await coordinator.run();
      redis.failNext.set('nrsOwnRelease', new Error('connection closed'));
      redis.failNext.set('nrsOwnHeartbeat', new Error('connection closed'));
      await expect(coordinator.stop()).resolves.toBeUndefined();
      // The fence is revoked first: nothing more is written under the generation from here.
      expect(partitions[0].fence.generation).toBeNull();
      expect(seen).toContain('revoked 0 gen 1 shutdown');
    });
  });
});
