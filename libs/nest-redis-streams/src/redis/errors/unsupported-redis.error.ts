/** The Redis server lacks a command the transport cannot work without; the message names it and the fix. */
export class UnsupportedRedisError extends Error {
  override readonly name = 'UnsupportedRedisError';
}
