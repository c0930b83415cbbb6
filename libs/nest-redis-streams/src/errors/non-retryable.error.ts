/**
 * Throw from a handler to park the entry in the dead-letter stream now instead of retrying it
 * (a validation failure that no retry can fix).
 */
export class NonRetryableError extends Error {
  override readonly name = 'NonRetryableError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}
