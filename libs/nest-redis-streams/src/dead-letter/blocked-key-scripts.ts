import type { Cluster, Redis } from 'ioredis';
import { blockedKeysKey, heldEntriesKey } from '../keys/index.js';
import { FENCED, type Fenced, type WriteTarget, fenceArgs } from '../ownership/fenced-writes.js';
import { LeanScript } from '../redis/lean-script.js';
import {
  ACK_AND_RELEASE,
  MARK_KEY_FAILING,
  OPERATOR_ACK,
  PARK_AND_BLOCK,
  RELEASE_BLOCKED_KEY,
  RUN_OR_HOLD,
} from '../redis/lua/block-key.js';
import { fenced } from '../redis/lua/fence-check.js';

// The scripts of `onDeadLetter: 'block-key'` (redis/lua/block-key.ts), run only by block-key handlers
// and the operations that release a key: not registered on every connection like scripts.ts.

/** What run-or-hold answers: see RUN_OR_HOLD. */
export type RunOrHold = 'run' | 'blocker' | 'held' | 'lost' | 'trimmed';

/** What blocking a key by a failed entry answers: see MARK_KEY_FAILING (null: not owned). */
export type MarkFailing = 'blocked' | 'other' | null;

const SCRIPTS = {
  runOrHold: new LeanScript<RunOrHold>(RUN_OR_HOLD, 3),
  runOrHoldFenced: new LeanScript<RunOrHold | 0>(fenced(RUN_OR_HOLD, '0'), 4),
  markFailing: new LeanScript<MarkFailing>(MARK_KEY_FAILING, 2),
  markFailingFenced: new LeanScript<MarkFailing | 0>(fenced(MARK_KEY_FAILING, '0'), 3),
  ackAndRelease: new LeanScript<string | null>(ACK_AND_RELEASE, 3),
  ackAndReleaseFenced: new LeanScript<string | null | 0>(fenced(ACK_AND_RELEASE, '0'), 4),
  parkAndBlock: new LeanScript<string | null>(PARK_AND_BLOCK, 3),
  parkAndBlockFenced: new LeanScript<string | null | 0>(fenced(PARK_AND_BLOCK, '0'), 4),
  release: new LeanScript<[number, string]>(RELEASE_BLOCKED_KEY, 4),
  operatorAck: new LeanScript<['gone'] | ['key', string] | ['acked'] | ['acked', string]>(OPERATOR_ACK, 3),
};

/**
 * Runs a script of a consumer's write target, fenced when it has a fence: KEYS then the owner hash,
 * then member and generation before ARGV. Null while no generation is held; FENCED when refused.
 */
async function runAs<R>(
  redis: Redis,
  target: WriteTarget,
  [plain, withFence]: [LeanScript<R>, LeanScript<R | 0>],
  keys: string[],
  args: string[],
): Promise<R | Fenced | null> {
  if (!target.fence) return plain.run(redis, [...keys, ...args]);
  const fence = fenceArgs(target.fence);
  if (fence === null) return null;
  const [ownerKey, member, generation] = fence;
  const reply = await withFence.run(redis, [...keys, ownerKey, member, generation, ...args]);
  return reply === 0 ? FENCED : reply;
}

/** The keys every block-key script starts with: stream, blocked-keys hash, the key's held stream. */
function blockKeys(stream: string, group: string, key: string): string[] {
  return [stream, blockedKeysKey(stream, group), heldEntriesKey(stream, group, key)];
}

/**
 * Run or hold an entry of `key` (see RUN_OR_HOLD); null while no generation is held. `fields`
 * only when asked again after 'trimmed': the entry's fields as read, held in its place.
 */
export function runOrHold(
  redis: Redis,
  target: WriteTarget,
  id: string,
  key: string,
  fields: readonly string[] = [],
): Promise<RunOrHold | Fenced | null> {
  const { stream, group, consumer } = target;
  const scripts: [LeanScript<RunOrHold>, LeanScript<RunOrHold | 0>] = [SCRIPTS.runOrHold, SCRIPTS.runOrHoldFenced];
  return runAs(redis, target, scripts, blockKeys(stream, group, key), [group, consumer, id, key, ...fields]);
}

/**
 * Blocks `key` by entry `id`, which failed and will be retried (see MARK_KEY_FAILING): only while
 * this consumer owns the entry and, under exclusive ownership, holds the partition's generation.
 */
export async function markKeyFailing(redis: Redis, target: WriteTarget, id: string, key: string): Promise<MarkFailing | Fenced> {
  const { stream, group, consumer } = target;
  const scripts: [LeanScript<MarkFailing>, LeanScript<MarkFailing | 0>] = [SCRIPTS.markFailing, SCRIPTS.markFailingFenced];
  const reply = await runAs(redis, target, scripts, [stream, blockedKeysKey(stream, group)], [group, consumer, id, key]);
  return reply ?? null;
}

/**
 * Acks the entry its key's block waited for and releases the next held one (see ACK_AND_RELEASE);
 * `trimmed`: Redis dropped the entry from the PEL with its payload, so no owner is checked.
 */
export function ackAndRelease(
  redis: Redis,
  target: WriteTarget,
  id: string,
  key: string,
  trimmed = false,
): Promise<string | null | Fenced> {
  const { stream, group, consumer } = target;
  const scripts: [LeanScript<string | null>, LeanScript<string | null | 0>] = [
    SCRIPTS.ackAndRelease,
    SCRIPTS.ackAndReleaseFenced,
  ];
  return runAs(redis, target, scripts, blockKeys(stream, group, key), [group, consumer, id, key, trimmed ? '0' : '1']);
}

/**
 * The park of an entry of a block-key group (DEAD_LETTER_IF_OWNED's arguments after `key`), marking
 * its key parked in the same script. `key` null: not known (payload trimmed, undecodable, an
 * operator's park): the script finds the block this entry holds, if any. Any string is a key, the
 * empty one too. Null when not owned or no generation is held.
 */
export async function parkAndBlock(
  redis: Redis,
  target: WriteTarget,
  deadLetterStream: string,
  key: string | null,
  parkArgs: string[],
): Promise<string | null | Fenced> {
  const { stream, group } = target;
  const scripts: [LeanScript<string | null>, LeanScript<string | null | 0>] = [SCRIPTS.parkAndBlock, SCRIPTS.parkAndBlockFenced];
  const keyArgs = key === null ? ['0', ''] : ['1', key];
  return runAs(redis, target, scripts, [stream, deadLetterStream, blockedKeysKey(stream, group)], [...keyArgs, ...parkArgs]);
}

/** What an operator's release did: see RELEASE_BLOCKED_KEY. */
export interface KeyRelease {
  /** The dead letter was deleted (a discard of the blocker). */
  deleted: boolean;
  /** False: the key was not blocked (by that dead letter); null: released, none waited; else the copy's id. */
  released: string | null | false;
  /** Refused, not forced: the key's blocker is still retried (`failing`) or a released copy runs (`releasing`). */
  busy?: 'failing' | 'releasing';
}

/**
 * Releases a blocked key (operators): with `deadLetterId`, discards that dead letter and releases
 * the key only while its block is parked on it; without, releases a parked key, or with `force`
 * whatever blocks it (see RELEASE_BLOCKED_KEY).
 */
export async function releaseBlockedKey(
  redis: Redis | Cluster,
  where: { stream: string; group: string; deadLetterStream: string },
  key: string,
  deadLetterId = '',
  force = false,
): Promise<KeyRelease> {
  const { stream, group, deadLetterStream } = where;
  const keys = [...blockKeys(stream, group, key), deadLetterStream];
  const [deleted, released] = await SCRIPTS.release.run(redis, [...keys, group, key, deadLetterId, force ? '1' : '0']);
  if (released === 'busy:failing' || released === 'busy:releasing') {
    return { deleted: deleted === 1, released: false, busy: released.slice('busy:'.length) as 'failing' | 'releasing' };
  }
  return { deleted: deleted === 1, released: released === 'not-blocked' ? false : released || null };
}

/** What an operator's ack did: see OPERATOR_ACK. */
export type OperatorAck =
  /** Not pending (acked or parked meanwhile): nothing written. */
  | { acked: false }
  /** Acked; `key` when its ordering key's block waited for it: `released` the held copy now running, null when none waited. */
  | { acked: true; key?: string; released?: string | null };

/**
 * An operator's ack of a pending entry (see OPERATOR_ACK): when its key's block (`onDeadLetter:
 * 'block-key'`) waits for it, the key's next held entry is released in the same script. The key
 * is learnt from the first answer and named in the second (its held stream is one of the script's
 * keys, so it stays right on a cluster); an entry belongs to one key, so two runs suffice.
 */
export async function operatorAck(redis: Redis | Cluster, stream: string, group: string, id: string): Promise<OperatorAck> {
  let key: string | null = null;
  for (;;) {
    const keys = [stream, blockedKeysKey(stream, group), heldEntriesKey(stream, group, key ?? '')];
    const reply = await SCRIPTS.operatorAck.run(redis, [...keys, group, id, key === null ? '0' : '1', key ?? '']);
    if (reply[0] === 'gone') return { acked: false };
    if (reply[0] === 'acked') {
      // A release answer comes only when the key was named (key !== null).
      return reply.length === 2 && key !== null ? { acked: true, key, released: reply[1] || null } : { acked: true };
    }
    // Found under another key than named: impossible twice (the entry's key does not change).
    if (key !== null) throw new Error(`Entry ${id} of "${stream}" group "${group}" is blocking "${key}" and "${reply[1]}"`);
    key = reply[1];
  }
}
