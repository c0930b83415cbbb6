import type { Redis } from 'ioredis';
import { DeadLetterReason } from 'nest-redis-streams';
import { splitDeadLetterFields } from '../../../libs/nest-redis-streams/src/dead-letter/dead-letter-record.js';
import { type Expectation, ledgerKeys } from '../../workers/chaos-ledger.js';

/** One entry of the dead-letter stream, mapped back to its ledger key. */
export interface DeadLetterRow {
  key: string;
  group: string;
  reason: string;
  originalId: string;
  deliveries: number;
  error: string;
  /** For a `trimmed-undelivered` record: how many entries it stands for (they have no ids). */
  lostCount: number;
}

/** What became of the produced events in one consumer group. */
export interface GroupTally {
  group: string;
  processed: number;
  /** Keys produced and neither processed nor dead-lettered nor tombstoned (yet). */
  missing: string[];
  /** Handler runs beyond the first, over processed events. */
  duplicates: number;
  /** Effects applied more than once. */
  dupEffects: number;
  deadLettered: number;
  tombstoned: number;
  /** Keys with more than one record for the same stream entry: that entry was parked twice. */
  parkedTwice: string[];
  /**
   * Extra records of keys whose event the producer wrote twice (a re-sent XADD whose first reply
   * was lost: two entry ids, one event id), each copy parked once. Not a double park.
   */
  copiesParked: number;
  /** Entries that the transport's trim audit reported as trimmed before delivery (no ids). */
  auditedLoss: number;
  /** Expected to be processed but parked, or expected to be parked but processed. */
  wrongOutcome: string[];
  /** Processed keys that no producer recorded (a retried XADD whose first reply was lost). */
  unrecorded: number;
  pending: number;
  lag: number | null;
}

export interface Reconciliation {
  produced: Map<string, string>;
  expected: Map<string, Expectation>;
  deadLetters: DeadLetterRow[];
  deliveries: Map<string, Map<string, number>>;
  groups: GroupTally[];
}

/** Reason of the trim audit's records (DeadLetterReason.TRIMMED_UNDELIVERED where it exists). */
const TRIMMED_UNDELIVERED = 'trimmed-undelivered';

const toCounts = (hash: Record<string, string>) => new Map(Object.entries(hash).map(([k, v]) => [k, Number(v)]));

/** Reads the dead-letter stream; a record's key is its event id, else its original entry id's key. */
export async function readDeadLetters(data: Redis, dlq: string, keyOfEntry: Map<string, string>): Promise<DeadLetterRow[]> {
  const entries = await data.xrange(dlq, '-', '+');
  return entries.map(([, fields]) => {
    const { meta, original } = splitDeadLetterFields(fields);
    const eventIdAt = original.findIndex((f, i) => i % 2 === 0 && f === 'event_id');
    const key = eventIdAt >= 0 ? original[eventIdAt + 1] : (keyOfEntry.get(meta.id) ?? `entry:${meta.id}`);
    return {
      key,
      group: meta.group,
      reason: meta.reason,
      originalId: meta.id,
      deliveries: Number(meta.deliveries),
      error: meta.error,
      lostCount: Number(meta.lost_count ?? 0),
    };
  });
}

/** The group's PEL size and lag (null when Redis cannot tell, or the group is gone). */
async function backlog(data: Redis, stream: string, group: string): Promise<{ pending: number; lag: number | null }> {
  try {
    const rows = (await data.xinfo('GROUPS', stream)) as unknown[][];
    for (const row of rows) {
      const info: Record<string, unknown> = {};
      for (let i = 0; i + 1 < row.length; i += 2) info[String(row[i])] = row[i + 1];
      if (info.name === group) return { pending: Number(info.pending), lag: info.lag === null ? null : Number(info.lag) };
    }
  } catch {
    // no such key: the stream is gone
  }
  return { pending: 0, lag: null };
}

/** Compares produced against processed, dead-lettered and tombstoned, per group. */
export async function reconcile(
  ledger: Redis,
  data: Redis,
  run: string,
  stream: string,
  groups: string[],
): Promise<Reconciliation> {
  const keys = ledgerKeys(run);
  const produced = new Map(Object.entries(await ledger.hgetall(keys.produced)));
  const expected = new Map(Object.entries(await ledger.hgetall(keys.expect))) as Map<string, Expectation>;
  const keyOfEntry = new Map([...produced].map(([key, id]) => [id, key]));
  const deadLetters = await readDeadLetters(data, `${stream}:dlq`, keyOfEntry);
  const deliveries = new Map<string, Map<string, number>>();
  const tallies: GroupTally[] = [];
  for (const group of groups) {
    const effects = toCounts(await ledger.hgetall(keys.effects(group)));
    const runs = toCounts(await ledger.hgetall(keys.deliveries(group)));
    deliveries.set(group, runs);
    const parked = new Map<string, DeadLetterRow>();
    const parkedTwice: string[] = [];
    const parkedEntries = new Set<string>();
    let copiesParked = 0;
    let auditedLoss = 0;
    for (const row of deadLetters) {
      if (row.group !== group) continue;
      if (row.reason === TRIMMED_UNDELIVERED) {
        auditedLoss += row.lostCount;
        continue;
      }
      if (parkedEntries.has(row.originalId)) parkedTwice.push(row.key);
      else if (parked.has(row.key)) copiesParked++;
      parkedEntries.add(row.originalId);
      parked.set(row.key, row);
    }
    const tally: GroupTally = {
      group,
      processed: 0,
      missing: [],
      duplicates: 0,
      dupEffects: 0,
      deadLettered: 0,
      tombstoned: 0,
      parkedTwice,
      copiesParked,
      auditedLoss,
      wrongOutcome: [],
      unrecorded: 0,
      ...(await backlog(data, stream, group)),
    };
    for (const [key, applied] of effects) {
      tally.processed++;
      tally.dupEffects += applied - 1;
      tally.duplicates += Math.max(0, (runs.get(key) ?? 1) - 1);
      if (!produced.has(key)) tally.unrecorded++;
    }
    for (const row of parked.values()) {
      if (row.reason === DeadLetterReason.PAYLOAD_TRIMMED) tally.tombstoned++;
      else tally.deadLettered++;
    }
    for (const key of produced.keys()) {
      const isProcessed = effects.has(key);
      const row = parked.get(key);
      if (!isProcessed && !row) tally.missing.push(key);
      const wanted = expected.get(key) ?? 'process';
      const tombstone = row?.reason === DeadLetterReason.PAYLOAD_TRIMMED;
      if ((wanted === 'process' && row && !tombstone) || (wanted === 'dead-letter' && isProcessed)) tally.wrongOutcome.push(key);
    }
    tallies.push(tally);
  }
  return { produced, expected, deadLetters, deliveries, groups: tallies };
}

/**
 * Every produced event has an outcome in every group, and nothing is pending. (Not `lag`: Redis 7.0
 * resets a group's entries-read when it reloads the AOF, so lag stays wrong after a restart.)
 */
export function isSettled(r: Reconciliation): boolean {
  return r.groups.every((g) => g.missing.length === 0 && g.pending === 0);
}
