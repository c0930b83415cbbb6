import type { TrimTarget } from '../trim/retention-options.interface.js';

/** A stream the operator names, with what Redis cannot tell about it. */
export interface StreamConfig {
  stream: string;
  /** @default `<stream>:dlq` (`{<stream>}:dlq` on a cluster) */
  deadLetterStream?: string;
  /** Shown beside the length: the retention its producers use. */
  retention?: TrimTarget;
  /** No write actions on this stream (the console answers 405). @default false */
  readOnly?: boolean;
}

/** Options of `StreamOperations`; every figure has a default in `OPERATIONS_DEFAULTS`. */
export interface StreamOperationsOptions {
  /** The streams to show and act on; without it, every stream with consumer groups (SCAN). */
  streams?: Array<string | StreamConfig>;
  /** Stream of the writes; refused requests go to `<auditStream>:refused`. @default 'nrs:console:audit' */
  auditStream?: string;
  /** About how many writes the audit stream keeps (`MAXLEN ~`); refusals never push one out. @default 10000 */
  auditMaxLen?: number;
  /** About how many refused requests `<auditStream>:refused` keeps (`MAXLEN ~`). @default 1000 */
  auditRefusalsMaxLen?: number;
  /** @default 60000 */
  stalledAfterMs?: number;
  /** @default 30000 */
  activeConsumerMs?: number;
  /** Pending rows sampled per group for the overview's oldest idle time. @default 10 */
  idleSampleSize?: number;
  /** @default 10000 */
  scanLimit?: number;
  /** How long a SCAN of the keyspace for streams is reused. @default 30000 */
  discoveryTtlMs?: number;
}

/** A page of a range of a stream or PEL. */
export interface RangeOptions {
  after?: string;
  from?: number;
  to?: number;
  count?: number;
}
