/** What every reply stream's name has after the key prefix: `<keyPrefix>nrs:replies:<host>:<uuid>`. */
export const REPLY_STREAM_INFIX = 'nrs:replies:';

/**
 * Where clients with `keyPrefix` put their reply streams; a server accepts a `reply_to` only
 * under it, so a request cannot make it write to any other key.
 */
export function replyStreamPrefix(keyPrefix: string): string {
  return `${keyPrefix}${REPLY_STREAM_INFIX}`;
}

/** The reply stream of one client instance (`id`), named for its `host`. */
export function replyStreamName(keyPrefix: string, host: string, id: string): string {
  return `${replyStreamPrefix(keyPrefix)}${host}:${id}`;
}
