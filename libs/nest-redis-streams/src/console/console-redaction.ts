import type { DeadLetter } from '../dead-letter/dead-letter.service.js';
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

/** Who a write is audited under: the guard's actor, or `anonymous`. */
export function actor(req: ConsoleRequest): string {
  return req.nrsConsoleActor ?? 'anonymous';
}
