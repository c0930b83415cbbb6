import type { Redis } from 'ioredis';
import { CLAIM_IF_OWNED } from './lua/claim-if-owned.js';
import { ACK_IF_OWNED } from './lua/ack-if-owned.js';
import { DEAD_LETTER_IF_OWNED } from './lua/dead-letter-if-owned.js';
import { CLAIMED_ENTRIES } from './lua/claimed-entries.js';
import { AUDIT_TRIM_LOSS } from './lua/audit-trim-loss.js';
import { CREATE_GROUP } from './lua/create-group.js';
import { DELETE_CONSUMER_IF_IDLE } from './lua/delete-consumer-if-idle.js';
import { REPAIR_ENTRIES_READ } from './lua/repair-entries-read.js';
import { READ_OWN_PENDING } from './lua/read-own-pending.js';
import { fenced } from './lua/fence-check.js';
import { OWN_AUTOCLAIM, OWN_CLAIM, OWN_HEARTBEAT, OWN_READ, OWN_RELEASE } from './lua/ownership.js';

/** Every id argument from `first` on, as a Lua list: what a refused fenced ack or claim reports as lost. */
const idsFrom = (first: number) => `(function() local l = {} for i = ${first}, #ARGV do l[#l + 1] = ARGV[i] end return l end)()`;

// Ownership checks read the PEL inside the script, so the check and the write are atomic: an old
// owner can never ack, renew or park an entry that another consumer reclaimed in between
// (XACK/XCLAIM take no consumer name and would happily act on someone else's entry).
// Each script lives in lua/ with its contract (KEYS, ARGV, reply) in a header.

/** The commands the scripts in lua/ add to a connection. */
export interface StreamScripts {
  nrsClaimIfOwned(
    stream: string,
    group: string,
    consumer: string,
    idleMs: number,
    retryCount: number,
    ...ids: string[]
  ): Promise<[lost: string[], trimmed: string[]]>;
  nrsClaimedEntries(
    stream: string,
    group: string,
    ...ids: string[]
  ): Promise<Array<[id: string, deliveries: number, fields: string[] | null]>>;
  nrsReadOwnPending(
    stream: string,
    group: string,
    consumer: string,
    after: string,
    count: number,
  ): Promise<Array<[id: string, deliveries: number, fields: string[] | null]>>;
  nrsAckIfOwned(
    stream: string,
    group: string,
    consumer: string,
    smallest: string,
    largest: string,
    ...ids: string[]
  ): Promise<string[]>;
  /** `metadata`: the count of metadata words, the metadata, then the fallback fields (see lua/dead-letter-if-owned.ts). */
  nrsDeadLetterIfOwned(
    stream: string,
    dlq: string,
    group: string,
    consumer: string,
    id: string,
    requireOwner: '1' | '0',
    ...metadataCountThenMetadataThenFallback: string[]
  ): Promise<string | null>;
  nrsDeleteConsumerIfIdle(stream: string, group: string, consumer: string): Promise<number>;
  /** `entriesRead` '0' leaves ENTRIESREAD out (Redis < 7.0); without it, it is tried and dropped if refused. */
  nrsCreateGroup(stream: string, group: string, startId: string, entriesRead?: '1' | '0'): Promise<'OK'>;
  /** Sets a caught-up group's stale entries-read right (see lua/repair-entries-read.ts); how far it was off. */
  nrsRepairEntriesRead(stream: string, group: string): Promise<number>;
  nrsAuditTrimLoss(
    stream: string,
    dlq: string,
    audit: string,
    legacyAudit: string,
    group: string,
    consumer: string,
    now: number,
    ...tombstoneFieldNamesThenReason: string[]
  ): Promise<[number, string] | 0>;
}

/**
 * Fenced variants (exclusive partition ownership): the same scripts with the partition's owner
 * hash as an extra last key and `member, generation` before their own arguments. A stale owner
 * is refused as if it owned none of the entries (see lua/fence-check.ts).
 */
export interface FencedStreamScripts {
  nrsClaimIfOwnedFenced(
    stream: string,
    ownerKey: string,
    member: string,
    generation: string,
    group: string,
    consumer: string,
    idleMs: number,
    retryCount: number,
    ...ids: string[]
  ): Promise<[lost: string[], trimmed: string[]]>;
  nrsAckIfOwnedFenced(
    stream: string,
    ownerKey: string,
    member: string,
    generation: string,
    group: string,
    consumer: string,
    smallest: string,
    largest: string,
    ...ids: string[]
  ): Promise<string[]>;
  nrsDeadLetterIfOwnedFenced(
    stream: string,
    dlq: string,
    ownerKey: string,
    member: string,
    generation: string,
    group: string,
    consumer: string,
    id: string,
    requireOwner: '1' | '0',
    ...metadataCountThenMetadataThenFallback: string[]
  ): Promise<string | null>;
  /** XADD of a reply, only while the request's partition is owned (single node: keys of two slots). */
  nrsReplyFenced(
    replyTo: string,
    ownerKey: string,
    member: string,
    generation: string,
    ...xaddArgs: (string | number)[]
  ): Promise<string | null>;
}

/** Exclusive partition ownership (see lua/ownership.ts and ownership/). */
export interface OwnershipScripts {
  nrsOwnHeartbeat(members: string, member: string, leaseMs: number, join: '1' | '0'): Promise<[number, string[]]>;
  nrsOwnClaim(ownerKey: string, member: string, leaseMs: number, generation: string): Promise<[number, number, string]>;
  nrsOwnRelease(ownerKey: string, member: string, generation: string): Promise<number>;
  nrsFencedRead(
    stream: string,
    ownerKey: string,
    member: string,
    generation: string,
    group: string,
    consumer: string,
    count: number,
  ): Promise<null | [Array<[string, string[]]>, string?]>;
  nrsFencedAutoClaim(
    stream: string,
    ownerKey: string,
    member: string,
    generation: string,
    group: string,
    consumer: string,
    minIdleMs: number,
    cursor: string,
    count: number,
    justId: '1' | '0',
  ): Promise<null | [string, unknown[], string[]?]>;
}

export type ScriptedRedis = Redis & StreamScripts & FencedStreamScripts & OwnershipScripts;

/** Registers the scripts on a connection (EVALSHA with EVAL fallback, handled by ioredis). */
export function withStreamScripts(redis: Redis): ScriptedRedis {
  redis.defineCommand('nrsClaimIfOwned', { numberOfKeys: 1, lua: CLAIM_IF_OWNED });
  redis.defineCommand('nrsAckIfOwned', { numberOfKeys: 1, lua: ACK_IF_OWNED });
  redis.defineCommand('nrsDeadLetterIfOwned', { numberOfKeys: 2, lua: DEAD_LETTER_IF_OWNED });
  redis.defineCommand('nrsAuditTrimLoss', { numberOfKeys: 4, lua: AUDIT_TRIM_LOSS });
  redis.defineCommand('nrsCreateGroup', { numberOfKeys: 1, lua: CREATE_GROUP });
  redis.defineCommand('nrsRepairEntriesRead', { numberOfKeys: 1, lua: REPAIR_ENTRIES_READ });
  redis.defineCommand('nrsClaimedEntries', { numberOfKeys: 1, lua: CLAIMED_ENTRIES });
  redis.defineCommand('nrsReadOwnPending', { numberOfKeys: 1, lua: READ_OWN_PENDING });
  redis.defineCommand('nrsDeleteConsumerIfIdle', { numberOfKeys: 1, lua: DELETE_CONSUMER_IF_IDLE });
  redis.defineCommand('nrsClaimIfOwnedFenced', { numberOfKeys: 2, lua: fenced(CLAIM_IF_OWNED, `{${idsFrom(5)}, {}}`) });
  redis.defineCommand('nrsAckIfOwnedFenced', { numberOfKeys: 2, lua: fenced(ACK_IF_OWNED, idsFrom(5)) });
  redis.defineCommand('nrsDeadLetterIfOwnedFenced', { numberOfKeys: 3, lua: fenced(DEAD_LETTER_IF_OWNED, 'false') });
  redis.defineCommand('nrsReplyFenced', {
    numberOfKeys: 2,
    lua: fenced("return redis.call('XADD', KEYS[1], unpack(ARGV))", 'false'),
  });
  redis.defineCommand('nrsOwnHeartbeat', { numberOfKeys: 1, lua: OWN_HEARTBEAT });
  redis.defineCommand('nrsOwnClaim', { numberOfKeys: 1, lua: OWN_CLAIM });
  redis.defineCommand('nrsOwnRelease', { numberOfKeys: 1, lua: OWN_RELEASE });
  redis.defineCommand('nrsFencedRead', { numberOfKeys: 2, lua: OWN_READ });
  redis.defineCommand('nrsFencedAutoClaim', { numberOfKeys: 2, lua: OWN_AUTOCLAIM });
  return redis as ScriptedRedis;
}
