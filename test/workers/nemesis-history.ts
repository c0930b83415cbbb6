// The nemesis harness's history (test/nemesis): what every process of a run did, one JSON record
// per line in a file of its own. Each record is written with appendFileSync before the process
// goes on, so a SIGKILL loses nothing the process did (the page cache outlives the process), and
// Redis faults cannot touch it. Times are the machine's monotonic clock (shared by every process
// on one host), in µs, so records of different processes fall in one order.
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** What one record says happened. */
export type HistoryKind = 'produced' | 'start' | 'finish' | 'fail' | 'retry-later' | 'redriven' | 'fault' | 'fault-end';

export interface HistoryRecord {
  kind: HistoryKind;
  /** Monotonic time in µs (process.hrtime, one clock for every process on the host). */
  t: number;
  /** Wall-clock ms, for comparing with Redis ids and dead letters' parkedAt. */
  wall: number;
  /** Writing process: an instance's consumer name, or `runner`. */
  by: string;
  eventId?: string;
  key?: string;
  seq?: number;
  group?: string;
  entryId?: string;
  stream?: string;
  /** Delivery count the transport gave the handler. */
  delivery?: number;
  /** For a delayed event: the earliest time, on Redis' clock (ms), it may be delivered. */
  dueMs?: number;
  /** For faults and re-drives: what was done. */
  detail?: string;
  /** For a re-driven dead letter: why and when it had been parked. */
  reason?: string;
  parkedAt?: number;
}

/** What a produced event asks of every handler that runs it. */
export interface NemesisPayload {
  seq: number;
  /** Ordering key (also the partition key); delayed events get one of their own. */
  key: string;
  /** Fails every delivery until the operator marks it fixed (then re-drives it). */
  poison?: boolean;
  /** Fails while the delivery count is at most this. */
  failFirst?: number;
  /** Throws RetryLater(ms) on its first run in each group. */
  retryLaterMs?: number;
  /** Handler time. */
  slowMs?: number;
}

/** The options a seed chose for the fleet's handlers. */
export interface WorkloadOptions {
  stream: string;
  partitions: number;
  concurrency: number;
  maxDeliveries: number;
  retryBackoffMs: number;
  minIdleTimeMs: number;
  ownershipLeaseMs: number;
}

/** The groups of the workload and what each promises (see docs/RELIABILITY.md, "The nemesis"). */
export const NEMESIS_GROUPS = {
  /** Every instance reads every partition; retries, RetryLater, parking. */
  plain: 'plain',
  /** Exclusive ownership + orderingKey with concurrency > 1: per-key order across the fleet. */
  keyed: 'keyed',
  /** As keyed, with onDeadLetter 'block-key': order through the dead-letter stream. */
  blocked: 'blocked',
} as const;

/** Files of one run's directory. */
export const nemesisPaths = (dir: string) => ({
  history: join(dir, 'history'),
  /** One empty file per poison event the operator fixed. */
  fixed: (eventId: string) => join(dir, 'fixed', eventId),
  /** One empty file per (group, event) that already asked to be retried later. */
  retriedLater: (group: string, eventId: string) => join(dir, 'retried-later', `${group}--${eventId}`),
  logs: join(dir, 'logs'),
});

/** Appends records to `<dir>/history/<by>-<pid>.jsonl`, one synchronous write each. */
export class HistoryWriter {
  private readonly file: string;

  constructor(
    dir: string,
    private readonly by: string,
  ) {
    const paths = nemesisPaths(dir);
    mkdirSync(paths.history, { recursive: true });
    mkdirSync(join(dir, 'fixed'), { recursive: true });
    mkdirSync(join(dir, 'retried-later'), { recursive: true });
    this.file = join(paths.history, `${by}-${process.pid}.jsonl`);
  }

  write(record: Omit<HistoryRecord, 't' | 'wall' | 'by'>): void {
    const full: HistoryRecord = { t: Number(process.hrtime.bigint() / 1000n), wall: Date.now(), by: this.by, ...record };
    appendFileSync(this.file, `${JSON.stringify(full)}\n`);
  }
}

/** Creates `file` unless it exists; true when this call created it (once across processes). */
export function firstTime(file: string): boolean {
  try {
    writeFileSync(file, '', { flag: 'wx' });
    return true;
  } catch {
    return false;
  }
}
