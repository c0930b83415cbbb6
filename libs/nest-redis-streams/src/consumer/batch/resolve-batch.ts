import { InvalidOptionsError } from '../../errors/invalid-options.error.js';
import type { StreamHandlerOptions } from '../../interfaces/stream-handler-options.interface.js';
import { MESSAGES } from '../../messages.js';
import type { ResolvedHandlerOptions } from '../stream-subscription.js';
import { BATCH_MESSAGES } from './batch.messages.js';

/** A batch handler's options after defaults were applied. */
export interface ResolvedBatchOptions {
  maxSize: number;
  maxWaitMs: number;
}

/** The batch settings of resolved handler options (undefined: one entry per call). */
export function batchOptionsOf(options: ResolvedHandlerOptions): ResolvedBatchOptions | undefined {
  return options.batch;
}

/**
 * Checks `batch` and what it cannot be combined with, and sizes the read-ahead: a handler's own
 * prefetchCount must hold a full batch (refused otherwise: silently raising it would hide a
 * mistake); without one, a batch handler holds maxSize × (concurrency + 1) entries, so the next
 * batch is read while `concurrency` batches run.
 */
export function resolveBatch(
  extras: StreamHandlerOptions,
  resolved: Pick<ResolvedHandlerOptions, 'concurrency' | 'prefetchCount' | 'ackMode' | 'orderingKey'>,
  where: string,
): ResolvedBatchOptions | undefined {
  const batch: unknown = extras.batch;
  if (batch === undefined) return undefined;
  if (typeof batch !== 'object' || batch === null || Array.isArray(batch)) {
    throw new InvalidOptionsError(BATCH_MESSAGES.notAnObject(batch, where));
  }
  const { maxSize, maxWaitMs = 0 } = batch as Partial<ResolvedBatchOptions>;
  if (typeof maxSize !== 'number' || !Number.isInteger(maxSize) || maxSize <= 0) {
    throw new InvalidOptionsError(MESSAGES.positiveInteger('batch.maxSize', maxSize, where));
  }
  if (typeof maxWaitMs !== 'number' || !Number.isInteger(maxWaitMs) || maxWaitMs < 0) {
    throw new InvalidOptionsError(BATCH_MESSAGES.badMaxWait(maxWaitMs, where));
  }
  if (resolved.ackMode === 'manual') throw new InvalidOptionsError(BATCH_MESSAGES.manualAck(where));
  if (resolved.orderingKey !== undefined) throw new InvalidOptionsError(BATCH_MESSAGES.orderingKey(where));
  if (extras.prefetchCount !== undefined && extras.prefetchCount < maxSize) {
    throw new InvalidOptionsError(BATCH_MESSAGES.prefetchTooSmall(extras.prefetchCount, maxSize, where));
  }
  return { maxSize, maxWaitMs };
}

/** prefetchCount of a batch handler: its own, else room for the running batches and the next. */
export function batchPrefetch(extras: StreamHandlerOptions, batch: ResolvedBatchOptions, resolved: ResolvedHandlerOptions) {
  return extras.prefetchCount ?? Math.max(resolved.prefetchCount, batch.maxSize * (resolved.concurrency + 1));
}
