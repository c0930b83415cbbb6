/**
 * Names of the streams requests are answered on: `<keyPrefix>nrs:replies:<host>:<uuid>`, one per
 * client instance. The one home of these names, neither the client's nor the server's: the
 * client names its own reply stream here, and the server answers only under the prefix.
 */
export const REPLY_STREAM_INFIX = 'nrs:replies:';

/** Where every reply stream of clients with `keyPrefix` starts: the server's default `replyStreamPrefix`. */
export function replyStreamPrefix(keyPrefix: string): string {
  return `${keyPrefix}${REPLY_STREAM_INFIX}`;
}

/** The reply stream of one client instance (`id`), named for its `host`. */
export function replyStreamName(keyPrefix: string, host: string, id: string): string {
  return `${replyStreamPrefix(keyPrefix)}${host}:${id}`;
}
