import type { EntryWrites } from './entry-writes.js';
import { type AckAnswer, FENCED, type Fenced } from '../ownership/fenced-writes.js';
import { compareEntryIds } from '../keys/index.js';

/** Largest number of ids sent in one ack script call. */
const MAX_IDS_PER_FLUSH = 1000;

/**
 * Collects acks of one stream and group and sends them as one multi-id call. A flush starts on
 * the next turn of the event loop after the first ack, so acks are never held back by a timer;
 * under load, everything finished while a flush is in flight goes out in the next one.
 *
 * Each ack carries the claim epoch its entry was read under (see redis/lua/claim-epoch.ts). A
 * batch whose ids share one, still the epoch Redis holds, is acked with a plain XACK; every
 * answer tells the epoch Redis holds now, and reads sent after it are stamped with it.
 */
export class AckBatcher {
  private queue: string[] = [];
  /** The claim epoch every queued id was read under; '' when unknown or mixed. */
  private queueReadUnder = '';
  /**
   * The claim epoch of the last answer ('' before one, or while the group has CLAIM reads). A
   * read sent from now on is sent after Redis held it, so its entries are read under it or later.
   */
  private knownEpoch = '';
  /** Ids of the flush in flight. */
  private sending: string[] = [];
  /** Callers waiting for an id's answer; several may wait for one id. */
  private waiters = new Map<string, Array<(owned: boolean) => void>>();
  /**
   * Exclusive ownership: acks Redis refused because the partition's lease had run out by its
   * clock, and the generation they were sent under. They are sent again once the lease is renewed
   * under that generation (nobody else could have written meanwhile); under another one, or none,
   * they are lost: the partition's new owner runs those entries again, in order.
   */
  private refused: string[] = [];
  private refusedUnder: string | null = null;
  private flushing: Promise<void> | null = null;
  private scheduled = false;

  constructor(
    /** The consumer's writes; under exclusive ownership its acks are fenced by the partition's generation. */
    private readonly writes: Pick<EntryWrites, 'ack' | 'fence'>,
    private readonly onLost: (id: string) => void,
    private readonly onAcked: (count: number) => void,
    private readonly onError: (err: Error, ids: string[]) => void,
  ) {}

  /** The claim epoch to stamp a read with that is sent now (see `knownEpoch`). */
  get claimEpoch(): string {
    return this.knownEpoch;
  }

  /**
   * Queues an ack; nothing to await (a failed ack leaves the entry pending for redelivery).
   * `readUnder`: the claim epoch its read was stamped with ('' unknown: the owner is checked).
   */
  add(id: string, readUnder = ''): void {
    if (this.queue.length === 0) this.queueReadUnder = readUnder;
    else if (this.queueReadUnder !== readUnder) this.queueReadUnder = '';
    this.queue.push(id);
    this.schedule();
  }

  /** Queues an ack and resolves once Redis answered: true if acked, false if no longer owned. */
  addAndWait(id: string, readUnder = ''): Promise<boolean> {
    return new Promise((resolve) => {
      const waiting = this.waiters.get(id);
      if (waiting) waiting.push(resolve);
      else this.waiters.set(id, [resolve]);
      this.add(id, readUnder);
    });
  }

  /** Ids queued, being sent or refused by the fence: finished here, still pending in Redis. */
  unsent(): Set<string> {
    return new Set([...this.queue, ...this.sending, ...this.refused]);
  }

  /**
   * Exclusive ownership: the lease was renewed, or the partition revoked. Acks the fence refused
   * go out again under the generation they were refused under, or are reported lost.
   */
  retryRefused(): void {
    if (this.refused.length === 0) return;
    const ids = this.refused;
    this.refused = [];
    if (this.writes.fence?.generation === this.refusedUnder) {
      // Their read epochs are not kept: the owner is checked.
      this.queueReadUnder = '';
      this.queue.push(...ids);
      this.schedule();
      return;
    }
    const unique = new Set(ids);
    for (const id of unique) this.onLost(id);
    this.settle(ids, unique);
  }

  /** Resolves when every queued ack has been sent. */
  async drain(): Promise<void> {
    while (this.flushing || this.queue.length > 0) {
      if (this.flushing) await this.flushing;
      else await this.flush();
    }
  }

  private schedule(): void {
    if (this.scheduled || this.flushing) return;
    this.scheduled = true;
    setImmediate(this.flushScheduled);
  }

  /** One callback for every scheduled flush, not a new closure per flush (flushes are many). */
  private readonly flushScheduled = (): void => {
    this.scheduled = false;
    void this.flush();
  };

  private flush(): Promise<void> {
    if (this.flushing || this.queue.length === 0) return this.flushing ?? Promise.resolve();
    const ids = this.queue.length <= MAX_IDS_PER_FLUSH ? this.queue : this.queue.slice(0, MAX_IDS_PER_FLUSH);
    this.queue = ids === this.queue ? [] : this.queue.slice(MAX_IDS_PER_FLUSH);
    this.sending = ids;
    // What stays queued keeps the stamp: it can only be too cautious ('' when mixed).
    this.flushing = this.send(ids, this.queueReadUnder).finally(() => {
      this.flushing = null;
      this.sending = [];
      if (this.queue.length > 0) this.schedule();
    });
    return this.flushing;
  }

  private async send(ids: string[], readUnder: string): Promise<void> {
    let answer: AckAnswer | Fenced;
    const generation = this.writes.fence?.generation ?? null;
    try {
      let smallest = ids[0];
      let largest = ids[0];
      for (let i = 1; i < ids.length; i++) {
        if (compareEntryIds(ids[i], smallest) < 0) smallest = ids[i];
        else if (compareEntryIds(ids[i], largest) > 0) largest = ids[i];
      }
      answer = await this.writes.ack(smallest, largest, readUnder, ids);
    } catch (err) {
      this.onError(err as Error, ids);
      this.settle(ids, new Set(ids));
      return;
    }
    if (answer === FENCED) {
      // Kept with their waiters; see `refused`. Every id kept was refused under the generation
      // held now: a grant or a loss resolves them all.
      this.refused.push(...ids);
      this.refusedUnder = generation;
      // Revoked (or granted anew) while this call was in flight: that renewal will never come.
      if (this.writes.fence?.generation !== generation) this.retryRefused();
      return;
    }
    this.knownEpoch = answer.epoch;
    const lost = answer.notAcked;
    for (const id of lost) this.onLost(id);
    // Redis' own count: an id queued twice is acked once.
    this.onAcked(answer.acked);
    this.settle(ids, new Set(lost));
  }

  private settle(ids: string[], notAcked: Set<string>): void {
    if (this.waiters.size === 0) return;
    for (const id of ids) {
      const waiting = this.waiters.get(id);
      if (!waiting) continue;
      this.waiters.delete(id);
      for (const resolve of waiting) resolve(!notAcked.has(id));
    }
  }
}
