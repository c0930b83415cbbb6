/** An option has a value the transport cannot work with; the message names it and the fix. */
export class InvalidOptionsError extends Error {
  override readonly name = 'InvalidOptionsError';
}
