/** What a handler's context may do with its entry: ack it, and learn that it was taken away. */
export interface EntryControl {
  /** Aborted when the entry was taken over by another consumer or its lease expired. */
  readonly signal: AbortSignal;
  ack(): Promise<boolean>;
}
