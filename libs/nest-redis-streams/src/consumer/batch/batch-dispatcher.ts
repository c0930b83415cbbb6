import { isObservable, lastValueFrom } from 'rxjs';
import { RedisStreamsContext } from '../../context/redis-streams.context.js';
import { RedisStreamsBatchContext } from '../../context/redis-streams-batch.context.js';
import type { AckBatcher } from '../ack-batcher.js';
import type { ConsumerRuntime } from '../consumer-runtime.interface.js';
import { type EntryDispatcher, logSafely } from '../entry-dispatcher.js';
import type { FailureHandler } from '../failure-handler.js';
import type { HeldEntry } from '../held-entry.js';
import type { SettleOutcome, SlotOwner } from '../slot-owner.interface.js';
import type { StreamSubscription } from '../stream-subscription.js';
import { CONSUMER_MESSAGES } from '../consumer.messages.js';
import { BatchOutcomes } from './batch-outcomes.js';
import { runBatchInTraceContext } from './batch-trace.js';

/**
 * Takes a started batch to its per-entry outcomes: each entry is prepared as a single entry
 * would be (entries that must not run are parked or skipped on their own), the rest go to the
 * handler in one call, and then every entry settles by itself: acked (all successes queued in
 * the same turn, so they leave in one ack call), or failed through the FailureHandler with its
 * own delivery count, back-off and dead-lettering. Events (`delivered`, `handled`, `failed`)
 * are emitted per entry, so metrics and health count entries, not batches.
 */
export class BatchDispatcher {
  constructor(
    private readonly owner: SlotOwner,
    private readonly subscription: StreamSubscription,
    private readonly rt: ConsumerRuntime,
    private readonly acks: AckBatcher,
    private readonly parking: FailureHandler,
    private readonly entries: EntryDispatcher,
  ) {}

  dispatch(batch: readonly HeldEntry[]): void {
    const runnable: HeldEntry[] = [];
    const payloads: unknown[] = [];
    const contexts: RedisStreamsContext[] = [];
    // Only a traced batch needs them (for its span links).
    const headers: Record<string, string>[] | null = this.rt.tracing ? [] : null;
    const { stream, group, consumer } = this.owner;
    const announce = this.rt.events.listenerCount('delivered') > 0;
    for (const entry of batch) {
      if (entry.settled) continue;
      // The same gate as a single entry's, right before the handler (its delivery was counted since).
      if (!this.owner.mayStart(entry)) {
        this.owner.settled(entry, 'unstarted');
        continue;
      }
      const decoded = this.entries.prepare(entry);
      if (decoded === null) continue;
      entry.invoked = true;
      runnable.push(entry);
      payloads.push(decoded.data);
      headers?.push(decoded.headers);
      const { deliveries } = entry;
      contexts.push(
        new RedisStreamsContext([stream, entry.id, group, consumer, deliveries, decoded.headers, decoded.eventId, entry]),
      );
      if (announce) this.emit('delivered', entry, () => this.rt.events.emit('delivered', this.owner.ref(entry)));
    }
    if (runnable.length === 0) return;
    const outcomes = new BatchOutcomes();
    const ctx = new RedisStreamsBatchContext([stream, group, consumer, contexts, outcomes]);
    const started = this.rt.events.listenerCount('handled') > 0 ? performance.now() : 0;
    const finish = (threw: boolean, err?: unknown) => this.finish(runnable, outcomes, started, threw, err);
    let handled: unknown;
    try {
      handled = headers
        ? runBatchInTraceContext(headers, { stream, group }, () => this.invokeToEnd(payloads, ctx))
        : this.rt.invokeBatch(this.subscription, payloads, ctx);
    } catch (err) {
      handled = Promise.reject(err);
    }
    Promise.resolve(handled).then(
      (result) => {
        // Nest returns an Observable whenever an interceptor is bound: done once it completes.
        if (!isObservable(result)) return finish(false);
        lastValueFrom(result, { defaultValue: undefined }).then(
          () => finish(false),
          (err: unknown) => finish(true, err),
        );
      },
      (err: unknown) => finish(true, err),
    );
  }

  /** Inside a span the handler must be finished (an Observable completed) before the span ends. */
  private async invokeToEnd(payloads: unknown[], ctx: RedisStreamsBatchContext): Promise<void> {
    const result = await this.rt.invokeBatch(this.subscription, payloads, ctx);
    if (isObservable(result)) await lastValueFrom(result, { defaultValue: undefined });
  }

  /**
   * Settles every entry of the finished batch. A thrown error fails every entry (with the error
   * given to fail() where there was one); otherwise only the failed ones fail.
   */
  private finish(entries: HeldEntry[], outcomes: BatchOutcomes, started: number, threw: boolean, thrown?: unknown): void {
    outcomes.closed = true;
    const durationMs = started === 0 ? 0 : performance.now() - started;
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i];
      const failure = outcomes.failureOf(i) ?? (threw ? { error: thrown } : null);
      if (started !== 0) this.emitHandled(entry, durationMs, failure === null);
      if (failure === null) {
        this.owner.settled(entry, this.succeeded(entry));
        continue;
      }
      this.parking.fail(entry, failure.error).then(
        (outcome) => this.owner.settled(entry, outcome),
        (err: unknown) => this.owner.settledUnexpectedly(entry, err),
      );
    }
  }

  private succeeded(entry: HeldEntry): SettleOutcome {
    if (entry.lost) return 'lost';
    // Acked through its own ctx.ack(), or trimmed away (Redis dropped it from the PEL).
    if (entry.acked || entry.trimmed) return 'acked';
    this.acks.add(entry.id, entry.readUnder);
    return 'acked';
  }

  private emitHandled(entry: HeldEntry, durationMs: number, ok: boolean): void {
    const endToEndMs = Date.now() - Number.parseInt(entry.id, 10);
    this.emit('handled', entry, () => this.rt.events.emit('handled', { ...this.owner.ref(entry), durationMs, endToEndMs, ok }));
  }

  /** A listener's bug must not keep the batch from running or its entries from settling. */
  private emit(event: string, entry: HeldEntry, send: () => void): void {
    try {
      send();
    } catch (err) {
      logSafely(this.rt, CONSUMER_MESSAGES.listenerThrew(event, entry.id, (err as Error)?.stack ?? err));
    }
  }
}
