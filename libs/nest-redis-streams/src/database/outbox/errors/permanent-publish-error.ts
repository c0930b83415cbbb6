import { PayloadTooLargeError } from '../../../client/errors/payload-too-large.error.js';
import { isNonRetryable } from '../../../errors/non-retryable.error.js';

/** Redis replies that no retry of the same XADD can change until an operator acts. */
const PERMANENT_REPLY = /^(WRONGTYPE|NOPERM)\b|no permissions to (run|access)/;

/**
 * Whether a publish failure is permanent: the entry is over the client's `maxPayloadBytes`, Redis
 * refused it with WRONGTYPE (the target key is not a stream) or NOPERM (ACL), or the publisher
 * threw NonRetryableError. The relay parks such an event instead of retrying it for ever. Looks
 * through `cause` (the client wraps Redis' ReplyError in PublishFailedError).
 */
export function isPermanentPublishError(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof PayloadTooLargeError || isNonRetryable(e)) return true;
    if (e.name === 'ReplyError' && PERMANENT_REPLY.test(e.message)) return true;
  }
  return false;
}
