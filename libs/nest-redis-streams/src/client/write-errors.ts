import { InvalidEventIdError } from '../errors/invalid-event-id.error.js';
import { ClientClosedError } from './errors/client-closed.error.js';
import { ConnectionFailedError } from './errors/connection-failed.error.js';
import { NoMessageHandlerError } from './errors/no-message-handler.error.js';
import { PayloadTooLargeError } from './errors/payload-too-large.error.js';
import { PublishFailedError } from './errors/publish-failed.error.js';
import { CLIENT_MESSAGES } from './client.messages.js';
import { explainAclError } from '../redis/acl-hint.js';
import { OfflineTimeoutError } from './errors/offline-timeout.error.js';

/** Where the failed write went and what bounded the wait, for the message. */
export interface WriteContext {
  stream: string;
  /** Redis address without credentials. */
  where: string;
  offlineTimeoutMs: number;
  /** The Redis user the client logs in as, named in the fix for a refused permission. */
  user?: string;
}

/** Errors that already explain themselves and name their stream. */
function isExplained(err: unknown): boolean {
  return [PublishFailedError, PayloadTooLargeError, InvalidEventIdError, NoMessageHandlerError, ClientClosedError].some(
    (type) => err instanceof type,
  );
}

/**
 * Turns what ioredis or Redis reported for a failed XADD into a PublishFailedError naming the
 * stream and the fix, and saying whether the entry may have been stored anyway.
 */
export function explainWriteError(err: unknown, { stream, where, offlineTimeoutMs, user = 'default' }: WriteContext): unknown {
  if (isExplained(err)) return err;
  const cause = err instanceof Error ? err.message : String(err);
  const fail = (message: string, maybeStored: boolean) => new PublishFailedError(message, stream, maybeStored, { cause: err });
  if (err instanceof ConnectionFailedError) return fail(CLIENT_MESSAGES.notConnectedFor(stream, cause), false);
  if (err instanceof OfflineTimeoutError) return fail(CLIENT_MESSAGES.offline(stream, where, offlineTimeoutMs), false);
  if (/^OOM\b/.test(cause)) return fail(CLIENT_MESSAGES.outOfMemory(stream, cause), false);
  // An error reply means Redis looked at the command and refused it.
  if (err instanceof Error && err.name === 'ReplyError')
    return fail(CLIENT_MESSAGES.rejected(stream, explainAclError(err, user)), false);
  // Anything else happened on the way (connection broke after sending, retries exhausted).
  return fail(CLIENT_MESSAGES.connectionLost(stream, where, cause), true);
}
