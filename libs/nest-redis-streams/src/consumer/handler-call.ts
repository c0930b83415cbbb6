import { isObservable, lastValueFrom } from 'rxjs';

/** A promise or any other thenable a handler returned (Nest's handlers return promises). */
export const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  value instanceof Promise ||
  (typeof value === 'object' && value !== null && typeof (value as PromiseLike<unknown>).then === 'function');

/** Calls a handler and resolves once it is finished: its promise settled, its Observable completed. */
export async function untilFinished(call: () => unknown): Promise<void> {
  const result = await call();
  if (isObservable(result)) await lastValueFrom(result, { defaultValue: undefined });
}
