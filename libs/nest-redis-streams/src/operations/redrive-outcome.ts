import type { Redis } from 'ioredis';
import { splitDeadLetterFields } from '../dead-letter/dead-letter-record.js';
import { compareStreamIds, startAfter } from '../keys/index.js';

/** A re-driven entry being watched: its new id in the source stream and the group that runs it. */
export interface Watched {
  deadLetterId: string;
  newId: string;
  group: string;
  redrivenAt: number;
}

export type RedriveOutcome = 'acked' | 'parked' | 'timed-out';

/**
 * Tells how re-driven entries ended. Parked again: a new dead letter names the entry's new id in
 * `dlq:id` (read incrementally, only records added since the watch began). Acknowledged: the
 * target group has delivered it (last-delivered-id at or past it) and it is neither pending nor
 * parked. Pending is read before the dead-letter stream, so an entry parked between the two reads
 * is seen parked, never taken for acknowledged.
 */
export class RedriveOutcomes {
  private readonly watched = new Map<string, Watched>();
  private readonly parked = new Set<string>();
  private dlqCursor: string;

  constructor(
    private readonly redis: Redis,
    private readonly stream: string,
    private readonly dlq: string,
    startedAt: number,
  ) {
    this.dlqCursor = `${startedAt}-0`;
  }

  watch(entry: Watched): void {
    this.watched.set(entry.newId, entry);
  }

  get outstanding(): number {
    return this.watched.size;
  }

  /** The outcomes decided since the last call; entries undecided past `settleMs` count as timed out. */
  async poll(settleMs: number): Promise<Array<Watched & { outcome: RedriveOutcome }>> {
    if (this.watched.size === 0) return [];
    const stillPending = new Set<string>();
    const delivered = new Map<string, string>();
    // One round trip for every watched entry's PEL row (a canary of 1,000 is polled several times a second).
    const watched = [...this.watched.values()];
    const pipeline = this.redis.pipeline();
    for (const w of watched) pipeline.xpending(this.stream, w.group, w.newId, w.newId, 1);
    const replies = (await pipeline.exec()) ?? [];
    watched.forEach((w, i) => {
      const [err, rows] = replies[i] ?? [null, []];
      if (err) throw err;
      if ((rows as unknown[]).length > 0) stillPending.add(w.newId);
    });
    for (const group of new Set(watched.map((w) => w.group))) delivered.set(group, await this.lastDelivered(group));
    await this.readNewDeadLetters();
    const decided: Array<Watched & { outcome: RedriveOutcome }> = [];
    const now = Date.now();
    for (const w of this.watched.values()) {
      let outcome: RedriveOutcome | null = null;
      if (this.parked.has(w.newId)) outcome = 'parked';
      else if (!stillPending.has(w.newId) && compareStreamIds(delivered.get(w.group) ?? '0-0', w.newId) >= 0) outcome = 'acked';
      else if (now - w.redrivenAt > settleMs) outcome = 'timed-out';
      if (outcome === null) continue;
      this.watched.delete(w.newId);
      decided.push({ ...w, outcome });
    }
    return decided;
  }

  private async lastDelivered(group: string): Promise<string> {
    const groups = (await this.redis.xinfo('GROUPS', this.stream)) as unknown[][];
    for (const row of groups) {
      const info = new Map<string, unknown>();
      for (let i = 0; i + 1 < row.length; i += 2) info.set(String(row[i]), row[i + 1]);
      if (info.get('name') === group) return String(info.get('last-delivered-id') ?? '0-0');
    }
    return '0-0';
  }

  private async readNewDeadLetters(): Promise<void> {
    for (;;) {
      const entries = await this.redis.xrange(this.dlq, this.dlqCursor, '+', 'COUNT', 500);
      for (const [, fields] of entries) {
        const id = splitDeadLetterFields(fields).meta.id;
        if (id && this.watched.has(id)) this.parked.add(id);
      }
      if (entries.length === 0) return;
      const next = startAfter(entries[entries.length - 1][0]);
      if (next === null) return;
      this.dlqCursor = next;
      if (entries.length < 500) return;
    }
  }
}
