import { FINGERPRINT_FORMAT } from '../dead-letter/failure-fingerprint.js';
import { OperationError } from './errors/operation.error.js';
import { OPERATIONS_MESSAGES } from './operations.messages.js';

/** How a canary re-drive of one failure group goes. */
export interface CanaryOptions {
  /** The failure group's fingerprint (see `failureGroups`). */
  cause: string;
  /**
   * How many dead letters go first; the rest wait until their outcomes are known.
   * @default 10
   */
  canary?: number;
  /**
   * Re-drives per second after the canaries passed.
   * @default 10
   */
  ratePerSec?: number;
  /**
   * Stop when more than this share of the re-driven entries whose outcome is known failed again
   * (0 stops at the first failure, 1 never stops).
   * @default 0.2
   */
  maxFailureRatio?: number;
  /**
   * How long a re-driven entry may take to be acknowledged or parked again; one still undecided
   * after this counts as a failure (it did not succeed in time).
   * @default 30000
   */
  settleMs?: number;
}

export type ResolvedCanaryOptions = Required<CanaryOptions>;

export const CANARY_DEFAULTS = { canary: 10, ratePerSec: 10, maxFailureRatio: 0.2, settleMs: 30_000 };

/** The ranges each option is checked against; a value outside answers bad-request naming it. */
const LIMITS: Record<keyof typeof CANARY_DEFAULTS, { min: number; max: number; integer: boolean }> = {
  canary: { min: 1, max: 1_000, integer: true },
  ratePerSec: { min: 0.01, max: 1_000, integer: false },
  maxFailureRatio: { min: 0, max: 1, integer: false },
  settleMs: { min: 100, max: 3_600_000, integer: true },
};

/** Validates and fills in a canary's options; refuses anything out of range before anything runs. */
export function resolveCanaryOptions(options: CanaryOptions): ResolvedCanaryOptions {
  if (typeof options.cause !== 'string' || !FINGERPRINT_FORMAT.test(options.cause)) {
    throw new OperationError('bad-request', OPERATIONS_MESSAGES.badFingerprint(String(options.cause)));
  }
  const resolved = { ...CANARY_DEFAULTS, cause: options.cause };
  for (const [name, limit] of Object.entries(LIMITS) as Array<[keyof typeof CANARY_DEFAULTS, (typeof LIMITS)['canary']]>) {
    const value: unknown = options[name];
    if (value === undefined) continue;
    const ok = typeof value === 'number' && Number.isFinite(value) && value >= limit.min && value <= limit.max;
    if (!ok || (limit.integer && !Number.isInteger(value))) {
      throw new OperationError('bad-request', OPERATIONS_MESSAGES.badCanaryOption(name, value, limit));
    }
    resolved[name] = value;
  }
  return resolved;
}
