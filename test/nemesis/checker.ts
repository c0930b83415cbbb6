// The checker of the nemesis harness: reads one run's history and the final Redis state and says,
// per group, which promise broke, with the smallest excerpt of the history that shows it. It
// judges promises (docs/handlers.md), not interleavings; the promises are listed in
// docs/RELIABILITY.md ("The nemesis").
import { NEMESIS_GROUPS, type HistoryRecord } from '../workers/nemesis-history.js';

/** A dead letter still in a dead-letter stream at the end, or one the operator re-drove. */
export interface Park {
  group: string;
  eventId: string;
  /** Its entry id in the source stream. */
  originalId: string;
  reason: string;
  parkedAt: number;
}

export interface FinalState {
  /** Dead letters left at the end (not re-driven). */
  letters: Park[];
  /** Pending entries per group, over every partition stream. */
  pending: Record<string, number>;
  /** Block-key state left behind: blocked keys and held entries, as `key → count`. */
  leftBlocked: string[];
}

export interface Violation {
  group: string;
  promise: string;
  detail: string;
  excerpt: HistoryRecord[];
}

const MAX_DELIVERIES = 'max-deliveries';

/** Delayed events carry a key of their own, so they are outside every order promise. */
const isDelayed = (r: HistoryRecord) => r.dueMs !== undefined;

export function check(history: HistoryRecord[], final: FinalState, maxDeliveries: number): Violation[] {
  const records = [...history].sort((a, b) => a.t - b.t);
  const produced = records.filter((r) => r.kind === 'produced');
  const faults = records.filter((r) => r.kind === 'fault' || r.kind === 'fault-end');
  const runs = (group: string) => records.filter((r) => r.group === group && r.eventId !== undefined);
  const parks: Park[] = [
    ...final.letters,
    ...records
      .filter((r) => r.kind === 'redriven')
      .map((r) => ({ group: r.group!, eventId: r.eventId!, originalId: r.entryId!, reason: r.reason!, parkedAt: r.parkedAt! })),
  ];
  /** The records of some events in a group, with the faults between their first and last. */
  const excerpt = (group: string, eventIds: string[]) => {
    const mine = records.filter((r) => eventIds.includes(r.eventId ?? '') && (r.group === group || r.kind === 'produced'));
    if (mine.length === 0) return [];
    const from = mine[0].t;
    const to = mine[mine.length - 1].t;
    return [...mine, ...faults.filter((f) => f.t >= from && f.t <= to)].sort((a, b) => a.t - b.t).slice(-40);
  };
  const violations: Violation[] = [];

  for (const group of Object.values(NEMESIS_GROUPS)) {
    const mine = runs(group);
    const finished = new Set(mine.filter((r) => r.kind === 'finish').map((r) => r.eventId));
    const parkedNow = new Set(final.letters.filter((l) => l.group === group).map((l) => l.eventId));

    // 1. Nothing produced is missing: each event finished in this group, or is parked (a dead letter).
    for (const p of produced) {
      if (finished.has(p.eventId) || parkedNow.has(p.eventId!)) continue;
      violations.push({
        group,
        promise: 'nothing missing',
        detail: `${p.eventId} (key ${p.key}) never finished and is not parked`,
        excerpt: excerpt(group, [p.eventId!]),
      });
    }
    if ((final.pending[group] ?? 0) > 0)
      violations.push({
        group,
        promise: 'nothing missing',
        detail: `${final.pending[group]} entries still pending at the end`,
        excerpt: [],
      });

    // 2. No park for max-deliveries without maxDeliveries started runs of that entry, less one per
    //    SIGKILL of an instance while it waited (read ahead, unstarted: docs/handlers.md "Read-ahead").
    for (const park of parks.filter((p) => p.group === group)) {
      if (park.reason !== MAX_DELIVERIES) {
        violations.push({
          group,
          promise: 'parked only for its documented reason',
          detail: `${park.eventId} parked as ${park.reason}`,
          excerpt: excerpt(group, [park.eventId]),
        });
        continue;
      }
      const starts = mine.filter((r) => r.kind === 'start' && r.entryId === park.originalId).length;
      const born = produced.find((p) => p.eventId === park.eventId)?.wall ?? 0;
      const kills = faults.filter(
        (f) => f.kind === 'fault' && (f.detail ?? '').startsWith('sigkill ') && f.wall >= born && f.wall <= park.parkedAt,
      ).length;
      if (starts + kills < maxDeliveries)
        violations.push({
          group,
          promise: 'no park without the documented deliveries',
          detail: `${park.eventId} (entry ${park.originalId}) parked after ${starts} started runs and ${kills} SIGKILLs; maxDeliveries ${maxDeliveries}`,
          excerpt: excerpt(group, [park.eventId]),
        });
    }

    // 3. A delayed event never runs before its due time (by Redis' clock: its entry id's time).
    for (const p of produced.filter(isDelayed)) {
      const early = mine.find(
        (r) => r.kind === 'start' && r.eventId === p.eventId && Number(r.entryId!.split('-')[0]) < p.dueMs!,
      );
      if (early)
        violations.push({
          group,
          promise: 'delayed entry not before its due time',
          detail: `${p.eventId} due at ${p.dueMs} ran as entry ${early.entryId}`,
          excerpt: excerpt(group, [p.eventId!]),
        });
    }

    // 4. Per-key order (exclusive ownership + orderingKey): an event's first start comes after
    //    every earlier event of its key started (keyed) or finished successfully (blocked).
    if (group === NEMESIS_GROUPS.plain) continue;
    const strict = group === NEMESIS_GROUPS.blocked;
    const byKey = new Map<string, HistoryRecord[]>();
    for (const p of produced.filter((r) => !isDelayed(r))) byKey.set(p.key!, [...(byKey.get(p.key!) ?? []), p]);
    const firstOf = (eventId: string, kind: HistoryRecord['kind']) => mine.find((r) => r.eventId === eventId && r.kind === kind);
    for (const events of byKey.values()) {
      events.sort((a, b) => a.seq! - b.seq!);
      for (let i = 1; i < events.length; i++) {
        const start = firstOf(events[i].eventId!, 'start');
        if (!start) continue;
        for (const earlier of events.slice(0, i)) {
          const gate = firstOf(earlier.eventId!, strict ? 'finish' : 'start');
          if (gate && gate.t < start.t) continue;
          violations.push({
            group,
            promise: strict ? 'block-key order' : 'per-key order',
            detail:
              `${events[i].eventId} (key ${events[i].key}, seq ${events[i].seq}) started before ${earlier.eventId} ` +
              `(seq ${earlier.seq}) ${strict ? 'finished' : 'started'}`,
            excerpt: excerpt(group, [earlier.eventId!, events[i].eventId!]),
          });
          break;
        }
      }
    }
  }
  if (final.leftBlocked.length > 0)
    violations.push({
      group: NEMESIS_GROUPS.blocked,
      promise: 'nothing missing',
      detail: `block-key state left at the end: ${final.leftBlocked.join(', ')}`,
      excerpt: [],
    });
  return violations;
}

/** One history record on one line, times relative to `origin` (µs). */
export function formatRecord(r: HistoryRecord, origin: number): string {
  const at = `+${((r.t - origin) / 1e6).toFixed(3)}s`;
  const what = [
    r.kind,
    r.group,
    r.eventId,
    r.key !== undefined ? `key=${r.key}` : '',
    r.entryId,
    r.delivery ? `n=${r.delivery}` : '',
  ];
  if (r.dueMs !== undefined) what.push(`due=${r.dueMs}`);
  if (r.reason) what.push(`reason=${r.reason}`);
  if (r.detail) what.push(r.detail);
  return `${at} ${r.by} ${what.filter(Boolean).join(' ')}`;
}
