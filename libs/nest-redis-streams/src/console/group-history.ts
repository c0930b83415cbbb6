import type { Redis } from 'ioredis';
import type { StreamOverview } from '../operations/overview.js';
import { CONSOLE_DEFAULTS } from './console.constants.js';

/**
 * One sample of a group: when, pending entries, lag (null when unknown), its dead letters, and
 * entries done (read less pending: acknowledged or parked; null before Redis 7.0), whose change
 * between samples is the processed rate.
 */
export type HistoryPoint = [at: number, pending: number, lag: number | null, deadLetters: number, done: number | null];

/** A group's samples, oldest first. */
export interface GroupHistorySeries {
  stream: string;
  group: string;
  points: HistoryPoint[];
}

/** The largest sequence number of a stream id: the end of a millisecond's range. */
const MAX_SEQ = '18446744073709551615';

/** The rows of one sample (a JSON array of arrays); none when the entry is not ours (another writer to the key). */
function rowsOf(fields: string[]): unknown[][] {
  try {
    const rows: unknown = JSON.parse(fields[fields.indexOf('groups') + 1] ?? '[]');
    return Array.isArray(rows) ? rows.filter((row): row is unknown[] => Array.isArray(row)) : [];
  } catch {
    return [];
  }
}

/**
 * A small history of every group's figures for the console's charts, kept in Redis so that every
 * replica shows the same: one stream entry per sampling period (a JSON array of the groups'
 * figures), capped at about `maxSamples` entries. A sample is taken when the overview is read
 * (so only while someone watches) and at most once per period across replicas: its entry id is the
 * period's start, and Redis refuses a second entry with the same id. Consoles of other apps that
 * share the audit stream share the key: a period another console took gets a second entry with the
 * groups it lacks, and each console answers only the streams it serves. Needs only XADD and
 * XREVRANGE on the key (`<auditStream>:history`, inside the operator's ACL pattern for the audit
 * streams).
 */
export class GroupHistory {
  constructor(
    private readonly redis: Redis,
    readonly key: string,
    private readonly sampleMs: number = CONSOLE_DEFAULTS.historySampleMs,
    private readonly maxSamples: number = CONSOLE_DEFAULTS.historyMaxSamples,
  ) {
    if (!Number.isSafeInteger(sampleMs) || sampleMs < 100)
      throw new Error(`historySampleMs must be a whole number of milliseconds, 100 or more; got ${String(sampleMs)}.`);
  }

  /** Records this period's sample unless its groups are there already (another viewer or replica). */
  async sample(overview: readonly StreamOverview[], now = Date.now()): Promise<boolean> {
    const rows = overview
      .flatMap((s) =>
        s.groups
          .filter((g) => !g.error)
          .map((g) => [
            s.stream,
            g.group,
            g.pending,
            g.lag,
            g.groupDeadLetters ?? g.deadLetters,
            g.entriesRead === null ? null : g.entriesRead - g.pending,
          ]),
      )
      .slice(0, CONSOLE_DEFAULTS.historyMaxGroups);
    const period = Math.floor(now / this.sampleMs) * this.sampleMs;
    if (await this.add(`${period}-0`, now, rows)) return true;
    // Taken: by a replica of this console, or by another app's console on the same audit stream
    // (serving other streams). Add the groups missing from the period beside it, so that neither
    // console's charts lose the periods the other sampled first.
    const taken = await this.redis.xrevrange(this.key, `${period}-${MAX_SEQ}`, `${period}-0`);
    const sampled = new Set(
      taken.flatMap(([, fields]) => rowsOf(fields).map((row) => `${String(row[0])}\u0000${String(row[1])}`)),
    );
    const missing = rows.filter((row) => !sampled.has(`${row[0]}\u0000${row[1]}`));
    if (missing.length === 0 || taken.length === 0) return false;
    const seq = Number(taken[0][0].split('-')[1]) + 1;
    return this.add(`${period}-${seq}`, now, missing);
  }

  /** XADD with an explicit id; false when Redis refuses it as not after the last (taken already). */
  private async add(id: string, now: number, rows: unknown[][]): Promise<boolean> {
    try {
      await this.redis.xadd(this.key, 'MAXLEN', '~', this.maxSamples, id, 'at', String(now), 'groups', JSON.stringify(rows));
      return true;
    } catch (err) {
      if (/equal or smaller/i.test(String(err))) return false;
      throw err;
    }
  }

  /** Every group's samples, oldest first (at most `maxSamples` read). */
  async read(): Promise<GroupHistorySeries[]> {
    const entries = await this.redis.xrevrange(this.key, '+', '-', 'COUNT', this.maxSamples);
    const series = new Map<string, GroupHistorySeries>();
    for (const [, fields] of entries.reverse()) {
      const at = Number(fields[fields.indexOf('at') + 1]);
      for (const [stream, group, pending, lag, dead, done] of rowsOf(fields)) {
        if (typeof stream !== 'string' || typeof group !== 'string') continue;
        const name = `${stream}\u0000${group}`;
        if (!series.has(name)) series.set(name, { stream, group, points: [] });
        const points = series.get(name)!.points;
        // Two replicas that both found the period without their groups add them twice: one point a period.
        const last = points.at(-1);
        if (last && Math.floor(last[0] / this.sampleMs) === Math.floor(at / this.sampleMs)) continue;
        const nullable = (v: unknown) => (v === null || v === undefined ? null : Number(v));
        points.push([at, Number(pending), nullable(lag), Number(dead), nullable(done)]);
      }
    }
    return [...series.values()];
  }
}
