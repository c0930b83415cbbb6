import { AuditIncompleteError } from './errors/audit-incomplete.error.js';
import type { AuditIntent, AuditLog } from './audit-log.js';
import { OperationError } from './errors/operation.error.js';
import { OPERATIONS_MESSAGES } from './operations.messages.js';

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** Records a refusal (nothing changed) apart from the writes, then throws it on. */
async function refused(
  audit: AuditLog,
  intent: AuditIntent,
  err: unknown,
  begun?: { id: string; startedAt: number },
): Promise<never> {
  if (!(err instanceof OperationError)) throw err;
  const failure = await audit.refuse(intent, err.message, begun).then(
    () => null,
    (auditErr: unknown) => messageOf(auditErr),
  );
  if (failure === null) throw err;
  throw new OperationError(err.kind, `${err.message} (This refusal could not be recorded in the audit: ${failure}.)`);
}

/**
 * Runs one operator write under the audit, intent first: `check` (may the write happen at all?),
 * then the intent record (refused by Redis, e.g. maxmemory: the write does not run), then `run`,
 * then its outcome in place of the intent. An `OperationError` from `check` or `run` means nothing
 * changed: it is recorded apart, as a refusal. Any other failure may have changed part of it: it
 * is recorded as a failed write. When the outcome cannot be recorded, `AuditIncompleteError` says
 * what was done and which intent record stays.
 */
export async function auditedWrite<S, T>(
  audit: AuditLog,
  intent: AuditIntent,
  check: () => Promise<S>,
  run: (checked: S) => Promise<T>,
): Promise<T> {
  const checked = await check().catch((err) => refused(audit, intent, err));
  const begun = await audit.begin(intent).catch((err: unknown) => {
    throw new OperationError(
      'unavailable',
      OPERATIONS_MESSAGES.auditRefused(intent.action, intent.stream, audit.stream, messageOf(err)),
    );
  });
  const incomplete = (what: string, result: unknown) => (auditErr: unknown) => {
    const reason = messageOf(auditErr);
    const message = OPERATIONS_MESSAGES.auditIncomplete(intent.action, intent.stream, what, audit.stream, begun.id, reason);
    throw new AuditIncompleteError(message, result, begun.id);
  };
  let result: T;
  try {
    result = await run(checked);
  } catch (err) {
    if (err instanceof OperationError) return refused(audit, intent, err, begun);
    const what = `failed (${messageOf(err)}), possibly after changing part of it,`;
    await audit.finish(begun, intent, false, messageOf(err)).catch(incomplete(what, undefined));
    throw err;
  }
  const outcome = JSON.stringify(result);
  await audit.finish(begun, intent, true, outcome).catch(incomplete(`was carried out (${outcome})`, result));
  return result;
}
