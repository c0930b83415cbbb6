/** The client was closed (or is closing) while a request waited for its reply, or before a write. */
export class ClientClosedError extends Error {
  override readonly name = 'ClientClosedError';
}
