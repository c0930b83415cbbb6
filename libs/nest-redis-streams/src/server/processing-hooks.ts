import type { BaseRpcContext } from '@nestjs/microservices';
import { isObservable, lastValueFrom } from 'rxjs';
import { finalize } from 'rxjs/operators';

/** Nest's `Server.runWithProcessingHooks` (protected there, so handed over as a function). */
export type RunWithProcessingHooks = (ctx: BaseRpcContext, fn: (runEndHook: () => void) => Promise<void>) => void;

/**
 * Runs a handler call between Nest's processing hooks (someone installed them, e.g. tracing):
 * resolves once the handler, and the Observable it may return, completed; the end hook runs
 * exactly once. Rejects with what the handler threw.
 */
export function betweenProcessingHooks(run: RunWithProcessingHooks, ctx: BaseRpcContext, call: () => unknown): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const started = run(ctx, async (runEndHook) => {
      try {
        const result = await call();
        if (isObservable(result)) await lastValueFrom(result.pipe(finalize(runEndHook)), { defaultValue: undefined });
        else runEndHook();
        resolve();
      } catch (err) {
        reject(err);
        throw err;
      }
    }) as unknown;
    // The hook chain rethrows what we already reported through reject().
    if (started instanceof Promise) started.catch(() => undefined);
  });
}
