import type { DeadLetter } from '../dead-letter/dead-letter.service.js';
import type { BlockedKey } from '../operations/blocked-keys.js';
import type { FieldPairs } from '../operations/entries.js';
import type { ConsoleRequest } from './console-access.guard.js';
import type { RedisStreamsConsoleOptions } from './console-options.interface.js';

/** Where a field list comes from, as the app's `redact` hook is told. */
interface FieldsAt {
  stream: string;
  group?: string;
  id: string;
}

/** Fields as the page may show them: through the app's `redact` hook when it has one. */
export function redactFields(options: RedisStreamsConsoleOptions, fields: FieldPairs | null, at: FieldsAt): FieldPairs | null {
  return fields && options.redact ? options.redact(fields, at) : fields;
}

/** A dead letter as the page may show it: its original fields through the `redact` hook. */
export function redactLetter(options: RedisStreamsConsoleOptions, letter: DeadLetter) {
  const { fields, ...rest } = letter;
  const at = { stream: letter.stream, group: letter.group, id: letter.id };
  return { ...rest, fields: redactFields(options, Object.entries(fields), at) };
}

/**
 * A blocked key as the page may show it: the ordering key comes from the payload, so it goes
 * through the `redact` hook as the field the engine writes on the key's dead letter
 * (`nrs:blocked_key`), told the blocking entry's id. A hook that drops the field hides the key.
 */
export function redactBlockedKey(options: RedisStreamsConsoleOptions, blocked: BlockedKey): BlockedKey {
  if (!options.redact) return blocked;
  const at = { stream: blocked.stream, group: blocked.group, id: blocked.blockingEntry };
  const shown = options.redact([[BLOCKED_KEY_FIELD, blocked.key]], at)?.find(([name]) => name === BLOCKED_KEY_FIELD);
  return { ...blocked, key: shown ? shown[1] : '(redacted)' };
}

/** The dead-letter field naming the ordering key a dead letter blocks (BLOCK-KEY layout). */
const BLOCKED_KEY_FIELD = 'nrs:blocked_key';

/** Who a write is audited under: the guard's actor, or `anonymous`. */
export function actor(req: ConsoleRequest): string {
  return req.nrsConsoleActor ?? 'anonymous';
}
