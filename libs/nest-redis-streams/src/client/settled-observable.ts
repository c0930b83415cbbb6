import { Observable } from 'rxjs';

const ignore = () => undefined;

/**
 * An Observable of work already under way: `result`'s value then completion, or its error, to
 * every subscriber, however late. It is hot like Nest's `emit()` (the write happens whether or
 * not anyone subscribes) but costs one promise reaction per subscriber instead of Nest's chain of
 * defer, mergeMap, connectable and Subject per call.
 */
export function settledObservable<T>(result: Promise<T>): Observable<T> {
  // A fire-and-forget emit has no subscriber: its failure must not become an unhandled rejection.
  result.catch(ignore);
  return new Observable<T>((subscriber) => {
    result.then(
      (value) => {
        subscriber.next(value);
        subscriber.complete();
      },
      (err: unknown) => subscriber.error(err),
    );
  });
}
