import type { Logger } from '@nestjs/common';
import type { TransportEvents } from '../events/transport-events.js';
import { assignPartitions } from './assignment.js';
import type { OwnedPartition } from './owned-partition.interface.js';
import { OWNERSHIP_MESSAGES } from './ownership.messages.js';
import type { ScriptedRedis } from '../redis/scripts.js';

/** Where a coordinator works: one logical stream's partitions in one group. */
export interface OwnershipScope {
  /** The logical stream (`orders`), whose partitions are `orders:{orders:0}`... */
  stream: string;
  group: string;
  consumer: string;
  member: string;
  membersKey: string;
  leaseMs: number;
}

/** One partition as the last round saw it. */
export interface PartitionOwnership {
  partition: number;
  stream: string;
  owner: string | null;
  generation: number;
  mine: boolean;
}

/**
 * Divides a group's partitions among its live instances. Every round (a third of the lease):
 * heartbeat (membership with a bounded lease), read every partition's owner, compute the shared
 * target (assignment.ts), renew what this instance keeps, hand over what it must give up
 * (cooperatively: the taker waits until it is released or its lease runs out), and claim free or
 * expired partitions assigned to it with generation + 1. Each partition is claimed in its own
 * single-key script, so at most one instance owns it whatever the instances' views.
 */
export class OwnershipCoordinator {
  private timer: NodeJS.Timeout | null = null;
  private round: Promise<void> | null = null;
  private claiming = true;
  private readonly handingOver = new Set<OwnedPartition>();
  /** What the last round saw, for health details. */
  view: { members: string[]; partitions: PartitionOwnership[]; at: number } = { members: [], partitions: [], at: 0 };
  rebalances = 0;
  /**
   * The owned set the last `rebalanced` reported. A hand-over releases its partition between
   * rounds (reported when it does), so a round compares with this, not with what it started from.
   */
  private reported = '';

  constructor(
    private readonly redis: ScriptedRedis,
    readonly scope: OwnershipScope,
    private readonly partitions: readonly OwnedPartition[],
    private readonly events: TransportEvents,
    private readonly logger: Logger,
  ) {}

  /** Runs the first round now (a lone instance owns everything before listen() resolves). */
  async start(): Promise<void> {
    await this.run();
    this.timer = setInterval(() => void this.run(), Math.max(50, Math.floor(this.scope.leaseMs / 3)));
  }

  /** One round; never throws. */
  run(): Promise<void> {
    this.round ??= this.balance()
      .catch((err: Error) => this.logger.warn(OWNERSHIP_MESSAGES.roundFailed(this.scope.stream, this.scope.group, err.message)))
      .finally(() => (this.round = null));
    return this.round;
  }

  /** Shutdown, first step: claim nothing more, hand nothing over; renewals go on. */
  stopClaiming(): void {
    this.claiming = false;
  }

  /** Shutdown, last step (consumers stopped): release every partition and leave the group. */
  async stop(): Promise<void> {
    this.claiming = false;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.round;
    const { member, membersKey, leaseMs } = this.scope;
    await Promise.all(this.partitions.map((p) => this.release(p, 'shutdown')));
    await this.redis.nrsOwnHeartbeat(membersKey, member, leaseMs, '0').catch(() => undefined);
  }

  private async balance(): Promise<void> {
    const { member, membersKey, leaseMs } = this.scope;
    const [now, members] = await this.redis.nrsOwnHeartbeat(membersKey, member, leaseMs, '1');
    const rows = await Promise.all(this.partitions.map((p) => this.redis.hmget(p.fence!.ownerKey, 'owner', 'gen', 'until')));
    const owners = rows.map(([owner, , until]) => (owner && Number(until) >= now ? owner : null));
    const target = assignPartitions(members, owners);
    await Promise.all(
      this.partitions.map((p, i) => {
        if (p.fence!.generation !== null) return this.keep(p, target[i] === member);
        if (this.claiming && target[i] === member && owners[i] === null) return this.claim(p);
        return Promise.resolve();
      }),
    );
    this.view = {
      members,
      at: Date.now(),
      partitions: this.partitions.map((p, i) => ({
        partition: p.partition,
        stream: p.stream,
        owner: p.fence!.generation !== null ? member : owners[i],
        generation: Number(p.fence!.generation ?? rows[i][1] ?? 0),
        mine: p.fence!.generation !== null,
      })),
    };
    this.reportOwned(members.length);
  }

  /** Says (log, event, count) when the owned set differs from the one last reported. */
  private reportOwned(members: number): void {
    const after = this.ownedPartitions();
    if (after.join() === this.reported) return;
    this.reported = after.join();
    this.rebalances++;
    const { stream, group, consumer } = this.scope;
    this.logger.log(OWNERSHIP_MESSAGES.rebalanced(stream, group, consumer, after, members));
    this.events.emit('rebalanced', { stream, group, consumer, members, owned: after });
  }

  /** Partitions this instance holds now, by index. */
  ownedPartitions(): number[] {
    return this.partitions.filter((p) => p.fence!.generation !== null).map((p) => p.partition);
  }

  /** Renews a partition held here; starts its hand-over when the target gave it to another. */
  private async keep(p: OwnedPartition, stays: boolean): Promise<void> {
    const sentAt = performance.now();
    const generation = p.fence!.generation!;
    const [ok] = await this.redis.nrsOwnClaim(p.fence!.ownerKey, this.scope.member, this.scope.leaseMs, generation);
    if (p.fence!.generation !== generation) return; // released meanwhile
    if (ok !== 1) {
      this.logger.warn(OWNERSHIP_MESSAGES.lost(p.stream, this.scope.group, generation));
      p.fence!.revoke();
      p.lost();
      this.emitRevoked(p, generation, 'lost');
      return;
    }
    p.fence!.grant(generation, sentAt, this.scope.leaseMs);
    if (!stays && this.claiming && !this.handingOver.has(p)) {
      this.handingOver.add(p);
      void p
        .handOver()
        .then(() => this.release(p, 'rebalance'))
        .then(() => this.reportOwned(this.view.members.length))
        // Still held and renewed: the next round starts the hand-over again. Said in the log,
        // never an unhandled rejection, which would end the process.
        .catch((err: Error) => this.logger.warn(OWNERSHIP_MESSAGES.handOverFailed(p.stream, this.scope.group, err.message)))
        .finally(() => this.handingOver.delete(p));
    }
  }

  private async claim(p: OwnedPartition): Promise<void> {
    const sentAt = performance.now();
    const [ok, generation] = await this.redis.nrsOwnClaim(p.fence!.ownerKey, this.scope.member, this.scope.leaseMs, '');
    if (ok !== 1) return;
    p.fence!.grant(String(generation), sentAt, this.scope.leaseMs);
    const { group, consumer } = this.scope;
    this.events.emit('partition-assigned', { stream: p.stream, group, consumer, partition: p.partition, generation });
    p.acquired();
  }

  private async release(p: OwnedPartition, reason: 'rebalance' | 'shutdown'): Promise<void> {
    const generation = p.fence!.generation;
    if (generation === null) return;
    p.fence!.revoke();
    await this.redis.nrsOwnRelease(p.fence!.ownerKey, this.scope.member, generation).catch(() => 0);
    this.emitRevoked(p, generation, reason);
  }

  private emitRevoked(p: OwnedPartition, generation: string, reason: 'rebalance' | 'shutdown' | 'lost'): void {
    const { group, consumer } = this.scope;
    const event = { stream: p.stream, group, consumer, partition: p.partition, generation: Number(generation), reason };
    this.events.emit('partition-revoked', event);
  }
}
