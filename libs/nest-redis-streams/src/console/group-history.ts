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

/**
 * A small history of every group's figures for the console's charts, kept in Redis so that every
 * replica shows the same: one stream entry per sampling period (a JSON array of the groups'
 * figures), capped at about `maxSamples` entries. A sample is taken when the overview is read
 * (so only while someone watches) and at most once per period across replicas: its entry id is the
 * period's start, and Redis refuses a second entry with the same id. Needs only XADD and XREVRANGE
 * on the key (`<auditStream>:history`, inside the operator's ACL pattern for the audit streams).
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

  /** Records this period's sample unless one is there already (another viewer or replica). */
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
    const id = `${Math.floor(now / this.sampleMs) * this.sampleMs}-0`;
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
      let rows: unknown;
      try {
        rows = JSON.parse(fields[fields.indexOf('groups') + 1] ?? '[]');
      } catch {
        continue; // A sample that is not ours (another writer to the key) is skipped, not fatal.
      }
      if (!Array.isArray(rows)) continue;
      for (const row of rows as unknown[][]) {
        const [stream, group, pending, lag, dead, done] = row;
        if (typeof stream !== 'string' || typeof group !== 'string') continue;
        const name = `${stream}\u0000${group}`;
        if (!series.has(name)) series.set(name, { stream, group, points: [] });
        const nullable = (v: unknown) => (v === null || v === undefined ? null : Number(v));
        series.get(name)!.points.push([at, Number(pending), nullable(lag), Number(dead), nullable(done)]);
      }
    }
    return [...series.values()];
  }
}
