import { failureCause } from '../dead-letter/failure-fingerprint.js';
import type { DeadLetter, DeadLetterService } from '../dead-letter/dead-letter.service.js';
import { OperationError } from './errors/operation.error.js';

/** Dead letters that failed for the same cause (error class and normalised message). */
export interface FailureGroup {
  fingerprint: string;
  errorClass: string;
  /** The message with numbers, ids and quoted values folded into placeholders. */
  pattern: string;
  /** One real message of the group (its newest), as written. */
  sample: string;
  count: number;
  /** Parked times of the oldest and newest record (ms since epoch). */
  firstSeen: number;
  lastSeen: number;
  /** Records per reason (max-deliveries, non-retryable…) and per consumer group that parked them. */
  reasons: Record<string, number>;
  groups: Record<string, number>;
  /** Source streams and how many records each holds (one stream unless merged across streams). */
  streams: Record<string, number>;
}

/** Failure groups of one or more dead-letter streams, and how much of them was read. */
export interface FailureGroups {
  groups: FailureGroup[];
  /** Records in the dead-letter stream(s) (XLEN). */
  total: number;
  /** Records read; less than `total` when the scan budget stopped the read (`complete` false). */
  scanned: number;
  complete: boolean;
  /** Id of the last record read (oldest first) in each dead-letter stream: how far the read got. */
  readUpTo: Record<string, string | null>;
  /** Across streams only: the streams that could not be read, and why (the others are still counted). */
  skipped?: Array<{ stream: string; reason: string }>;
}

/** The fingerprint of a dead letter's cause. */
export function fingerprintOf(letter: Pick<DeadLetter, 'errorClass' | 'error' | 'reason'>): string {
  return failureCause(letter.errorClass, letter.error, letter.reason).fingerprint;
}

const emptyMap = () => Object.create(null) as Record<string, number>;
const copy = (map: Record<string, number>) => Object.assign(emptyMap(), map);
const bump = (map: Record<string, number>, key: string, by = 1) => (map[key] = (map[key] ?? 0) + by);

/**
 * Groups the records of a dead-letter stream by cause, reading oldest first at most `scanLimit`
 * records (in pages; `signal` stops it between pages). Computed on read, never kept: the park
 * stays one write, and discards and re-drives need no counters to keep in step.
 */
export async function readFailureGroups(
  service: DeadLetterService,
  source: string,
  dlq: string,
  options: { scanLimit: number; signal?: AbortSignal },
): Promise<FailureGroups> {
  const byFingerprint = new Map<string, FailureGroup>();
  const total = await service.count(dlq);
  let after: string | undefined;
  let scanned = 0;
  let complete = false;
  while (scanned < options.scanLimit) {
    options.signal?.throwIfAborted();
    const page = await service.list(dlq, { after, count: Math.min(500, options.scanLimit - scanned) });
    for (const letter of page.items) add(byFingerprint, source, letter);
    scanned += page.items.length;
    after = page.items.at(-1)?.id ?? after;
    if (page.next === null) {
      complete = true;
      break;
    }
  }
  // A full budget that ends exactly on the last record is complete too.
  complete ||= scanned >= total;
  return { groups: sortGroups([...byFingerprint.values()]), total, scanned, complete, readUpTo: { [dlq]: after ?? null } };
}

function add(byFingerprint: Map<string, FailureGroup>, source: string, letter: DeadLetter): void {
  const cause = failureCause(letter.errorClass, letter.error, letter.reason);
  let group = byFingerprint.get(cause.fingerprint);
  if (!group) {
    const [firstSeen, lastSeen] = [letter.parkedAt, letter.parkedAt];
    group = {
      ...cause,
      sample: letter.error,
      count: 0,
      firstSeen,
      lastSeen,
      reasons: emptyMap(),
      groups: emptyMap(),
      streams: emptyMap(),
    };
    byFingerprint.set(cause.fingerprint, group);
  }
  group.count += 1;
  group.firstSeen = Math.min(group.firstSeen, letter.parkedAt);
  if (letter.parkedAt >= group.lastSeen) [group.lastSeen, group.sample] = [letter.parkedAt, letter.error];
  bump(group.reasons, letter.reason ?? '');
  bump(group.groups, letter.group ?? '');
  bump(group.streams, letter.stream || source);
}

/** Most records first; ties by the most recent failure. */
function sortGroups(groups: FailureGroup[]): FailureGroup[] {
  return groups.sort((a, b) => b.count - a.count || b.lastSeen - a.lastSeen);
}

/** The groups of several streams' dead letters merged by fingerprint (counts and times combined). */
export function mergeFailureGroups(parts: FailureGroups[]): FailureGroups {
  const merged = new Map<string, FailureGroup>();
  for (const part of parts) {
    for (const group of part.groups) {
      const into = merged.get(group.fingerprint);
      if (!into) {
        merged.set(group.fingerprint, {
          ...group,
          reasons: copy(group.reasons),
          groups: copy(group.groups),
          streams: copy(group.streams),
        });
        continue;
      }
      into.count += group.count;
      into.firstSeen = Math.min(into.firstSeen, group.firstSeen);
      if (group.lastSeen >= into.lastSeen) [into.lastSeen, into.sample] = [group.lastSeen, group.sample];
      for (const key of ['reasons', 'groups', 'streams'] as const)
        for (const [name, n] of Object.entries(group[key])) bump(into[key], name, n);
    }
  }
  return {
    groups: sortGroups([...merged.values()]),
    total: parts.reduce((sum, p) => sum + p.total, 0),
    scanned: parts.reduce((sum, p) => sum + p.scanned, 0),
    complete: parts.every((p) => p.complete),
    readUpTo: Object.assign({}, ...parts.map((p) => p.readUpTo)) as Record<string, string | null>,
  };
}

/**
 * The failure groups of several streams merged by fingerprint. One stream that cannot be read
 * (gone, another type, not served: an OperationError) is named in `skipped` instead of hiding the
 * others; any other error propagates.
 */
export async function readFailureGroupsAcross(
  streams: string[],
  readOne: (stream: string) => Promise<FailureGroups>,
): Promise<FailureGroups> {
  const parts: FailureGroups[] = [];
  const skipped: Array<{ stream: string; reason: string }> = [];
  for (const stream of streams) {
    const part = await readOne(stream).catch((err: unknown) => {
      if (!(err instanceof OperationError)) throw err;
      skipped.push({ stream, reason: err.message });
      return null;
    });
    if (part) parts.push(part);
  }
  return { ...mergeFailureGroups(parts), skipped };
}
