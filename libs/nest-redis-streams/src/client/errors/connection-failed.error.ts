/** `connect()` could not reach Redis; the message says where it was expected and what to do. */
export class ConnectionFailedError extends Error {
  override readonly name = 'ConnectionFailedError';
}
