/** A stream entry whose fields cannot be turned into handler data. It is dead-lettered at once. */
export class UndecodableEntryError extends Error {
  override readonly name = 'UndecodableEntryError';
}
