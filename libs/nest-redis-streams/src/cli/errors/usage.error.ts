/** Bad command-line input: printed with a pointer to the command's help, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}
