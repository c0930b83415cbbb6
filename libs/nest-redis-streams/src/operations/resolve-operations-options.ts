import { InvalidOptionsError } from '../errors/invalid-options.error.js';
import { HEALTH_DEFAULTS } from '../health/health.constants.js';
import { MESSAGES } from '../messages.js';
import { OPERATIONS_DEFAULTS } from './operations.constants.js';
import type { StreamOperationsOptions } from './stream-operations-options.interface.js';

/** `StreamOperationsOptions` with every figure set. */
export type ResolvedOperationsOptions = Required<Omit<StreamOperationsOptions, 'streams'>>;

/** Merges the defaults once and checks the audit caps. */
export function resolveOperationsOptions(options: StreamOperationsOptions): ResolvedOperationsOptions {
  const o = {
    auditStream: options.auditStream ?? OPERATIONS_DEFAULTS.auditStream,
    auditMaxLen: options.auditMaxLen ?? OPERATIONS_DEFAULTS.auditMaxLen,
    auditRefusalsMaxLen: options.auditRefusalsMaxLen ?? OPERATIONS_DEFAULTS.auditRefusalsMaxLen,
    stalledAfterMs: options.stalledAfterMs ?? OPERATIONS_DEFAULTS.stalledAfterMs,
    activeConsumerMs: options.activeConsumerMs ?? OPERATIONS_DEFAULTS.activeConsumerMs,
    idleSampleSize: options.idleSampleSize ?? Math.min(10, HEALTH_DEFAULTS.idleSampleSize),
    scanLimit: options.scanLimit ?? OPERATIONS_DEFAULTS.scanLimit,
    discoveryTtlMs: options.discoveryTtlMs ?? 30_000,
  };
  // Checked here: the outcome script trims after it wrote, so a bad cap would fail it half done.
  for (const key of ['auditMaxLen', 'auditRefusalsMaxLen'] as const) {
    const value = o[key];
    if (!Number.isSafeInteger(value) || value < 1)
      throw new InvalidOptionsError(MESSAGES.positiveInteger(key, value, ' (console and CLI audit)'));
  }
  return o;
}
