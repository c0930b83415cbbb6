import type { Redis } from 'ioredis';
import { groupMembersKey, partitionOfKey, partitionOwnerKey, partitionStream } from '../keys/index.js';
import { OPERATIONS_DEFAULTS } from './operations.constants.js';
import { checkPartitions } from './stream-position.js';

/** One partition's owner hash as Redis holds it (written only by the ownership scripts). */
export interface PartitionOwnerRow {
  partition: number;
  /** The partition's stream key (`orders:{orders:3}`; the stream itself for a single active consumer). */
  stream: string;
  /** The owner whose lease is running, or null when the partition is free or its lease ran out. */
  owner: string | null;
  /** The fencing token: grows by one on every claim, so the sum over partitions counts claims. */
  generation: number;
  /** Time left on the owner's lease by Redis' clock; null when nobody holds it. */
  leaseLeftMs: number | null;
}

/** One instance taking part in a group's ownership. */
export interface OwnershipMember {
  /** Consumer name plus an id of that start (`pod-1#a1b2c3d4`). */
  member: string;
  /** Time left on its membership lease; a member at or below 0 is dropped at the next round. */
  leaseLeftMs: number;
  /** Partitions it owns now. */
  owns: number[];
}

/** Exclusive ownership of one logical stream in one group, read from Redis (not one instance's view). */
export interface GroupOwnership {
  /** The logical stream (`orders`), whose partitions are `orders:{orders:0}`... */
  stream: string;
  group: string;
  members: OwnershipMember[];
  partitions: PartitionOwnerRow[];
  /** Partitions no live member holds (free, lease ran out, or held by an instance that left). */
  unowned: number[];
  /** Claims made since the partitions were first owned (the sum of the generations). */
  claims: number;
}

/** A partition's owner as the overview shows it beside the group's figures. */
export type GroupOwner = Omit<PartitionOwnerRow, 'partition' | 'stream'>;

/** How many partitions are probed per round trip when their number is not given. */
const PROBE_BATCH = 16;

type OwnerHash = [owner: string | null, gen: string | null, until: string | null];

function toOwner(row: OwnerHash, now: number): GroupOwner {
  const until = Number(row[2] ?? 0);
  const live = Boolean(row[0]) && until >= now;
  return { owner: live ? row[0] : null, generation: Number(row[1] ?? 0), leaseLeftMs: live ? until - now : null };
}

/** Redis' clock in ms: leases are stamped by it, so time left is measured by it too. */
export async function redisNow(redis: Redis): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/**
 * Who owns which partition of `stream` in `group` under `ownership: 'exclusive'`, with the
 * members' leases and each partition's generation; null when the group has no ownership keys
 * (shared consumption). `stream` may be the logical stream or one of its partition streams.
 * Without `partitions`, owner hashes are probed 16 at a time up to the first one missing (each
 * partition gets its hash on its first claim, and a lone instance claims them all at start).
 * Either way at most `OPERATIONS_DEFAULTS.maxPartitions` are read, and `signal` (the request
 * ended) stops the probe between round trips. Read-only: nothing here writes, so it never
 * disturbs a running assignment.
 */
export async function readOwnership(
  redis: Redis,
  stream: string,
  group: string,
  partitions?: number,
  signal?: AbortSignal,
): Promise<GroupOwnership | null> {
  checkPartitions(partitions);
  const base = partitionOfKey(stream)?.stream ?? stream;
  const [now, memberRows] = await Promise.all([
    redisNow(redis),
    redis.zrange(groupMembersKey(base, group), '0', '-1', 'WITHSCORES'),
  ]);
  const hashes = await readOwnerHashes(redis, base, group, partitions, signal);
  if (hashes.length === 0 && memberRows.length === 0) return null;
  const rows = hashes.map(({ stream: key, row }, partition) => ({ partition, stream: key, ...toOwner(row, now) }));
  const members: OwnershipMember[] = [];
  for (let i = 0; i < memberRows.length; i += 2) {
    const member = memberRows[i];
    const owns = rows.filter((r) => r.owner === member).map((r) => r.partition);
    members.push({ member, leaseLeftMs: Number(memberRows[i + 1]) - now, owns });
  }
  members.sort((a, b) => (a.member < b.member ? -1 : 1));
  const live = new Set(members.filter((m) => m.leaseLeftMs > 0).map((m) => m.member));
  return {
    stream: base,
    group,
    members,
    partitions: rows,
    unowned: rows.filter((r) => r.owner === null || !live.has(r.owner)).map((r) => r.partition),
    claims: rows.reduce((sum, r) => sum + r.generation, 0),
  };
}

async function readOwnerHashes(
  redis: Redis,
  base: string,
  group: string,
  partitions: number | undefined,
  signal: AbortSignal | undefined,
): Promise<Array<{ stream: string; row: OwnerHash }>> {
  const read = (key: string) => redis.hmget(partitionOwnerKey(key, group), 'owner', 'gen', 'until') as Promise<OwnerHash>;
  const exists = (row: OwnerHash) => row.some((v) => v !== null);
  if (partitions === 1 || partitions === undefined) {
    // A single active consumer (`partitions: 1`) owns the stream itself.
    const single = await read(base);
    if (exists(single) || partitions === 1) return exists(single) ? [{ stream: base, row: single }] : [];
  }
  const found: Array<{ stream: string; row: OwnerHash }> = [];
  const limit = partitions ?? OPERATIONS_DEFAULTS.maxPartitions;
  while (found.length < limit) {
    signal?.throwIfAborted();
    const keys = Array.from({ length: Math.min(PROBE_BATCH, limit - found.length) }, (_, i) =>
      partitionStream(base, found.length + i),
    );
    const batch = await Promise.all(keys.map(read));
    for (const [i, row] of batch.entries()) {
      if (partitions === undefined && !exists(row)) return found;
      found.push({ stream: keys[i], row });
    }
  }
  return found;
}

/**
 * The owner of each (stream, group) in one round: one HMGET per group on the owner hash beside
 * the stream (in its slot, so a cluster sends each to the stream's node), and TIME. Null where
 * the group has no owner hash (shared consumption) or it could not be read.
 */
export async function readGroupOwners(
  redis: Redis,
  targets: ReadonlyArray<{ stream: string; group: string }>,
): Promise<Array<GroupOwner | null>> {
  if (targets.length === 0) return [];
  // A user without HMGET or TIME (an ACL written before ownership existed) still gets the figures.
  const [now, rows] = await Promise.all([
    redisNow(redis).catch(() => Date.now()),
    Promise.all(
      targets.map(({ stream, group }) =>
        (redis.hmget(partitionOwnerKey(stream, group), 'owner', 'gen', 'until') as Promise<OwnerHash>).catch(() => null),
      ),
    ),
  ]);
  return rows.map((row) => (row?.some((v) => v !== null) ? toOwner(row, now) : null));
}
