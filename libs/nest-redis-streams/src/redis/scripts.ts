import type { Redis } from 'ioredis';
import { CLAIM_IF_OWNED } from './lua/claim-if-owned.js';
import { RETRY_IF_OWNED } from './lua/retry-if-owned.js';
import { CONSUMER_BEAT } from './lua/consumer-beat.js';
import { ACK_UNDER_EPOCH, AUTOCLAIM_COUNTED, CLAIM_COUNTED, CLAIM_FROM_COUNTED, SETID_COUNTED } from './lua/claim-epoch.js';
import { DEAD_LETTER_IF_OWNED } from './lua/dead-letter-if-owned.js';
import { CLAIMED_ENTRIES } from './lua/claimed-entries.js';
import { AUDIT_TRIM_LOSS } from './lua/audit-trim-loss.js';
import { CREATE_GROUP } from './lua/create-group.js';
import { DELETE_CONSUMER_IF_IDLE } from './lua/delete-consumer-if-idle.js';
import { REPAIR_ENTRIES_READ } from './lua/repair-entries-read.js';
import { READ_OWN_PENDING } from './lua/read-own-pending.js';
import { fenced } from './lua/fence-check.js';
import { LeanScript } from './lean-script.js';
import type { XAutoClaimJustIdReply } from './replies.js';
import { OWN_AUTOCLAIM, OWN_CLAIM, OWN_HEARTBEAT, OWN_READ, OWN_RELEASE } from './lua/ownership.js';

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
  /** nrsClaimIfOwned for a retry's back-off, recording its real times (see lua/retry-if-owned.ts). */
  nrsRetryIfOwned(
    stream: string,
    waits: string,
    checks: string,
    group: string,
    consumer: string,
    ...idleCountBackoffTtlChecksToleranceThenIds: Array<string | number>
  ): Promise<[lost: string[], trimmed: string[]]>;
  /** This consumer is alive until `now + ttlMs` (see lua/consumer-beat.ts). */
  nrsConsumerBeat(beats: string, consumer: string, ttlMs: number): Promise<number>;
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
  /** The ack of the consumer (see lua/claim-epoch.ts): `readUnder` '' when unknown or mixed. */
  nrsAckUnderEpoch(
    stream: string,
    claimEpoch: string,
    group: string,
    consumer: string,
    smallest: string,
    largest: string,
    readUnder: string,
    ...ids: string[]
  ): Promise<AckUnderEpochReply>;
  /** XAUTOCLAIM … JUSTID raising the claim epoch when it took anything (the reclaimer's rounds). */
  nrsAutoClaimCounted(
    stream: string,
    claimEpoch: string,
    group: string,
    consumer: string,
    minIdleMs: number,
    cursor: string,
    count: number,
  ): Promise<XAutoClaimJustIdReply>;
  /** XCLAIM … JUSTID (min idle 0) of whoever holds the ids, raising the claim epoch when it took anything. */
  nrsClaimCounted(stream: string, claimEpoch: string, group: string, to: string, ...ids: string[]): Promise<string[]>;
  /**
   * nrsClaimCounted of the ids `from` still holds, checked in the same script (operator moves) →
   * [claimed, ids `from` holds whose entry is gone from the stream: left pending, not claimed].
   */
  nrsClaimFromCounted(
    stream: string,
    claimEpoch: string,
    group: string,
    from: string,
    to: string,
    ...ids: string[]
  ): Promise<[string[], string[]]>;
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
  /** 1 deleted, 0 it holds entries, 2 it is alive (see lua/delete-consumer-if-idle.ts). */
  nrsDeleteConsumerIfIdle(stream: string, beats: string, group: string, consumer: string): Promise<number>;
  /** `entriesRead` '0' leaves ENTRIESREAD out (Redis < 7.0); without it, it is tried and dropped if refused. */
  nrsCreateGroup(stream: string, claimEpoch: string, group: string, startId: string, entriesRead?: '1' | '0'): Promise<'OK'>;
  /** XGROUP SETID raising the claim epoch: a `>` read after a move back hands pending entries to its reader. */
  nrsSetIdCounted(stream: string, claimEpoch: string, group: string, id: string): Promise<'OK'>;
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
 * hash as an extra last key and `member, generation` before their own arguments. A refused
 * generation has its own answer (null; 0 for the dead letter), distinct from "not this
 * consumer's entry": the lease may still be renewed under it (see lua/fence-check.ts).
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
  ): Promise<[lost: string[], trimmed: string[]] | null>;
  nrsRetryIfOwnedFenced(
    stream: string,
    waits: string,
    checks: string,
    ownerKey: string,
    member: string,
    generation: string,
    group: string,
    consumer: string,
    ...idleCountBackoffTtlChecksToleranceThenIds: Array<string | number>
  ): Promise<[lost: string[], trimmed: string[]] | null>;
  nrsAckUnderEpochFenced(
    stream: string,
    claimEpoch: string,
    ownerKey: string,
    member: string,
    generation: string,
    group: string,
    consumer: string,
    smallest: string,
    largest: string,
    readUnder: string,
    ...ids: string[]
  ): Promise<AckUnderEpochReply | null>;
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
  ): Promise<string | null | 0>;
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
  /** Raises the claim epoch (see lua/claim-epoch.ts) when it took anything. */
  nrsFencedAutoClaim(
    stream: string,
    claimEpoch: string,
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

/** What the epoch ack answers: the epoch now ('' while CLAIM reads are on), how many it acked, the ids it did not. */
export type AckUnderEpochReply = [epoch: string, acked: number, ...notAcked: string[]];

export type ScriptedRedis = Redis & StreamScripts & FencedStreamScripts & OwnershipScripts;

/** Each script once per process (its SHA1 is computed here), with its number of keys. */
const SCRIPTS: Record<keyof (StreamScripts & FencedStreamScripts & OwnershipScripts), LeanScript<unknown>> = {
  nrsClaimIfOwned: new LeanScript(CLAIM_IF_OWNED, 1),
  nrsRetryIfOwned: new LeanScript(RETRY_IF_OWNED, 3),
  nrsConsumerBeat: new LeanScript(CONSUMER_BEAT, 1),
  nrsAckUnderEpoch: new LeanScript(ACK_UNDER_EPOCH, 2),
  nrsAutoClaimCounted: new LeanScript(AUTOCLAIM_COUNTED, 2),
  nrsClaimCounted: new LeanScript(CLAIM_COUNTED, 2),
  nrsClaimFromCounted: new LeanScript(CLAIM_FROM_COUNTED, 2),
  nrsDeadLetterIfOwned: new LeanScript(DEAD_LETTER_IF_OWNED, 2),
  nrsAuditTrimLoss: new LeanScript(AUDIT_TRIM_LOSS, 4),
  nrsCreateGroup: new LeanScript(CREATE_GROUP, 2),
  nrsSetIdCounted: new LeanScript(SETID_COUNTED, 2),
  nrsRepairEntriesRead: new LeanScript(REPAIR_ENTRIES_READ, 1),
  nrsClaimedEntries: new LeanScript(CLAIMED_ENTRIES, 1),
  nrsReadOwnPending: new LeanScript(READ_OWN_PENDING, 1),
  nrsDeleteConsumerIfIdle: new LeanScript(DELETE_CONSUMER_IF_IDLE, 2),
  nrsClaimIfOwnedFenced: new LeanScript(fenced(CLAIM_IF_OWNED, 'false'), 2),
  nrsRetryIfOwnedFenced: new LeanScript(fenced(RETRY_IF_OWNED, 'false'), 4),
  nrsAckUnderEpochFenced: new LeanScript(fenced(ACK_UNDER_EPOCH, 'false'), 3),
  nrsDeadLetterIfOwnedFenced: new LeanScript(fenced(DEAD_LETTER_IF_OWNED, '0'), 3),
  nrsReplyFenced: new LeanScript(fenced("return redis.call('XADD', KEYS[1], unpack(ARGV))", 'false'), 2),
  nrsOwnHeartbeat: new LeanScript(OWN_HEARTBEAT, 1),
  nrsOwnClaim: new LeanScript(OWN_CLAIM, 1),
  nrsOwnRelease: new LeanScript(OWN_RELEASE, 1),
  nrsFencedRead: new LeanScript(OWN_READ, 2),
  nrsFencedAutoClaim: new LeanScript(OWN_AUTOCLAIM, 3),
};

/** A connection the trim-gap audit runs on: the commands connection, or a read loop's reader. */
export type TrimAuditConnection = Redis & Pick<StreamScripts, 'nrsAuditTrimLoss'>;

/**
 * Adds the trim-gap audit to a reader, sent as EVAL (LeanScript.runInOrder): the read sent right
 * after it on the same connection runs after the audit, without waiting for its reply.
 */
export function withInOrderAudit(reader: Redis): TrimAuditConnection {
  const audit = SCRIPTS.nrsAuditTrimLoss;
  return Object.assign(reader, {
    nrsAuditTrimLoss: (...args: Array<string | number>) => audit.runInOrder(reader, args) as Promise<[number, string] | 0>,
  });
}

/**
 * Adds the scripts to a connection as methods (EVALSHA, with EVAL when the server lacks the
 * script). Not ioredis' defineCommand: see LeanScript for why.
 */
export function withStreamScripts(redis: Redis): ScriptedRedis {
  const target = redis as unknown as Record<string, (...args: (string | number)[]) => Promise<unknown>>;
  for (const [name, script] of Object.entries(SCRIPTS)) target[name] = (...args) => script.run(redis, args);
  return redis as ScriptedRedis;
}
