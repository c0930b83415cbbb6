/** Another delivery of the same business event is being handled right now; retried later. */
export class EventInProgressError extends Error {
  override readonly name = 'EventInProgressError';
}
