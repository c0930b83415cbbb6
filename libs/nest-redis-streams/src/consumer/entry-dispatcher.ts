import { isObservable, lastValueFrom } from 'rxjs';
import { decodeScanned, type DecodedEntry, emptyScan, type ScannedEntry, scanEntry } from '../codec/envelope.js';
import { isThenable, untilFinished } from './handler-call.js';
import { RedisStreamsContext } from '../context/redis-streams.context.js';
import { DeadLetterReason } from '../dead-letter-reason.js';
import { parkBeforeRun, undecodableReason } from './delivery-policy.js';
import { runInTraceContext } from '../tracing/trace-context.js';
import type { AckBatcher } from './ack-batcher.js';
import type { FailureHandler } from './failure-handler.js';
import type { HeldEntry } from './held-entry.js';
import type { KeyBlocks, KeyTurn } from './key-blocks.js';
import { KeySerializer } from './key-serializer.js';
import { type GuardContext, type Skip, skipBeforeRunning } from './request-guard.js';
import type { ConsumerRuntime } from './consumer-runtime.interface.js';
import type { SettleOutcome, SlotOwner } from './slot-owner.interface.js';
import type { StreamSubscription } from './stream-subscription.js';
import { CONSUMER_MESSAGES } from './consumer.messages.js';

/** What a keyed entry's turn resolves with when the ownership gate refused it at its turn. */
const NOT_STARTED = Symbol('not started');

/**
 * Takes one entry from its slot to its outcome: decoded and handed to the handler, then acked on
 * success, retried or parked on failure; entries that must not reach the handler are parked at
 * once. This runs for every entry of the stream, so the common case (no ordering key, no tracing)
 * is one synchronous call into the handler and one reaction on its promise: no async function
 * frames, which showed up as a quarter of the consumer's garbage.
 */
export class EntryDispatcher {
  private readonly keys = new KeySerializer();
  /** What the request guard reads of this consumer: built once, not per entry. */
  private guard: GuardContext | null = null;
  /**
   * Every entry is scanned into this one object: prepare() reads it only synchronously (the
   * guard, then the decode copies out what it keeps), so nothing sees it change under it.
   */
  private readonly scan: ScannedEntry = emptyScan();
  /** `onDeadLetter: 'block-key'`: the blocks of the handler's ordering keys (null otherwise). */
  private readonly blocks: KeyBlocks | null;

  constructor(
    private readonly owner: SlotOwner,
    private readonly subscription: StreamSubscription,
    private readonly rt: ConsumerRuntime,
    private readonly acks: AckBatcher,
    private readonly parking: FailureHandler,
  ) {
    this.blocks = parking.blocks ?? null;
  }

  /** Throws only when a `delivered` listener throws; the owner then frees the slot itself. */
  dispatch(entry: HeldEntry): void {
    if (!this.owner.mayStart(entry)) return this.owner.settled(entry, 'unstarted');
    const decoded = this.prepare(entry);
    if (decoded === null) return;
    const { events } = this.rt;
    if (events.listenerCount('delivered') > 0) events.emit('delivered', this.owner.ref(entry));
    const started = events.listenerCount('handled') > 0 ? performance.now() : 0;
    const { stream, group, consumer } = this.owner;
    const ctx = new RedisStreamsContext([
      stream,
      entry.id,
      group,
      consumer,
      entry.deliveries,
      decoded.headers,
      decoded.eventId,
      entry,
    ]);
    let handled: unknown;
    try {
      const key = this.orderingKeyOf(decoded.data);
      if (key === undefined && !this.rt.tracing) {
        entry.invoked = true;
        handled = this.rt.invoke(this.subscription, decoded, ctx);
      } else if (key !== undefined && this.blocks !== null) {
        return this.dispatchBlocking(this.blocks, entry, decoded, ctx, key, started);
      } else {
        handled = this.invokeWrapped(entry, decoded, ctx, key);
      }
    } catch (err) {
      handled = Promise.reject(err);
    }
    // Nest's handlers return promises. A handler registered by hand may return a plain value:
    // then the entry settles now, without a trip through the microtask queue. Any other thenable
    // is adopted by a native promise (a native one is returned as it is), so the entry is acked
    // only once it resolves.
    if (!isThenable(handled)) return this.handlerReturned(entry, started, handled);
    Promise.resolve(handled).then(
      (result) => this.handlerReturned(entry, started, result),
      (err: unknown) => this.handlerFailed(entry, started, err),
    );
  }

  /**
   * Decodes an entry for its handler, or settles it here when it must not reach one (payload
   * trimmed, skipped, delivered too often, undecodable) and returns null. Batches use it per entry.
   */
  prepare(entry: HeldEntry): DecodedEntry | null {
    const { fields } = entry;
    // Asked before the skip check, which a trimmed payload cannot go through; an exhausted budget
    // is parked only after it (an entry this group must not run is skipped, whatever its count).
    const early = parkBeforeRun(fields, entry.deliveries, this.subscription.options);
    if (fields === null || early === DeadLetterReason.PAYLOAD_TRIMMED) {
      this.settleAfter(entry, this.parking.park(entry, DeadLetterReason.PAYLOAD_TRIMMED));
      return null;
    }
    const scan = scanEntry(fields, this.scan);
    this.guard ??= {
      stream: this.owner.stream,
      group: this.owner.group,
      kind: this.subscription.kind,
      replyStreamPrefix: this.rt.replyStreamPrefix,
      clock: Date.now,
    };
    const skip = skipBeforeRunning(entry.id, scan, this.guard);
    if (skip !== null) {
      this.skip(entry, skip);
      return null;
    }
    if (early !== null) {
      const blockKey = this.blocks === null ? undefined : this.blockKeyOf(scan, fields);
      if (blockKey === undefined || this.blocks === null) this.settleAfter(entry, this.refuse(entry, undefined));
      else this.settleAfter(entry, this.refuseBlocking(this.blocks, entry, blockKey));
      return null;
    }
    try {
      return decodeScanned(scan, fields, this.rt.deserializer);
    } catch (err) {
      this.settleAfter(entry, this.parking.park(entry, undecodableReason(err), err));
      return null;
    }
  }

  /**
   * An entry this group must not run (see skipBeforeRunning) is acknowledged unhandled: logged,
   * and counted through the `skipped` event. A re-drive for another group is routine (debug);
   * an expired or refused request is worth a warning.
   */
  private skip(entry: HeldEntry, skip: Skip): void {
    const { stream } = this.owner;
    try {
      if (skip.reason === 'other-group') this.rt.logger.debug(CONSUMER_MESSAGES.skippedOtherGroup(entry.id, stream, skip.detail));
      else this.rt.logger.warn(skip.detail);
      this.rt.events.emit('skipped', { ...this.owner.ref(entry), reason: skip.reason, detail: skip.detail });
    } catch (err) {
      logSafely(this.rt, CONSUMER_MESSAGES.listenerThrew('skipped', entry.id, (err as Error)?.stack ?? err));
    }
    if (!entry.lost) this.acks.add(entry.id, entry.readUnder);
    this.owner.settled(entry, entry.lost ? 'lost' : 'skipped');
  }

  /** An entry delivered too often goes to the dead-letter stream instead of the handler. */
  private refuse(entry: HeldEntry, blockKey: string | undefined): Promise<SettleOutcome> {
    const { maxDeliveries } = this.subscription.options;
    const error = new Error(CONSUMER_MESSAGES.deliveredTooOften(entry.deliveries, maxDeliveries));
    return this.parking.park(entry, DeadLetterReason.MAX_DELIVERIES, error, true, blockKey);
  }

  /**
   * Block-key handlers: an entry delivered too often is parked only when it is its key's turn (the
   * key is free, or this is what its block waits for); behind a block it is held like any other
   * entry of the key, so it cannot sit in the dead-letter stream while later entries run.
   */
  private refuseBlocking(blocks: KeyBlocks, entry: HeldEntry, key: string): Promise<SettleOutcome> {
    return this.keys.run(key, async () => {
      const allowed = await this.startingTurn(blocks, entry, key);
      return allowed === 'run' || allowed === 'blocker' ? this.refuse(entry, key) : allowed;
    });
  }

  /**
   * Block-key handlers: the key's turn for an entry about to start (run or hold, one script),
   * between two passes of the ownership gate. The turn is a round trip: a stop that began
   * meanwhile hands the entry back, and a lease that ran out lets the partition's next owner
   * run it, so what the gate refuses after the turn settles `unstarted` like what it refuses
   * before. 'run' and 'blocker' write nothing: the key's block stays as it was, and the entry's
   * next turn (here or in another consumer) gets the same answer.
   */
  private async startingTurn(blocks: KeyBlocks, entry: HeldEntry, key: string): Promise<KeyTurn | SettleOutcome> {
    if (!this.owner.mayStart(entry)) return 'unstarted';
    const allowed = await blocks.turn(entry, key);
    if (allowed !== 'run' && allowed !== 'blocker') return allowed;
    return this.owner.mayStart(entry) ? allowed : 'unstarted';
  }

  /**
   * Block-key handlers: the ordering key of an entry parked before it runs (delivered too often,
   * e.g. it crashed the process each time), so that its park blocks its key like a failure's.
   */
  private blockKeyOf(scan: ScannedEntry, fields: string[]): string | undefined {
    try {
      return this.orderingKeyOf(decodeScanned(scan, fields, this.rt.deserializer).data);
    } catch {
      return undefined;
    }
  }

  /**
   * The handler inside a trace span and/or behind earlier entries of its ordering key. Both must
   * last until the handler is finished, so an Observable it returned (Nest returns one whenever an
   * interceptor is bound) is run to completion inside them. An entry queued behind its key starts
   * only when its turn comes, so it passes the ownership gate then: the partition may have been
   * lost (or its lease run out) while its predecessors ran.
   */
  private invokeWrapped(
    entry: HeldEntry,
    decoded: DecodedEntry,
    ctx: RedisStreamsContext,
    key: string | undefined,
  ): Promise<unknown> {
    const { stream, group } = this.owner;
    const invoke = () => {
      entry.invoked = true;
      return runInTraceContext(decoded.headers, { stream, group, entryId: entry.id }, () =>
        untilFinished(() => this.rt.invoke(this.subscription, decoded, ctx)),
      );
    };
    if (key === undefined) return invoke();
    return this.keys.run<unknown>(key, () => (this.owner.mayStart(entry) ? invoke() : Promise.resolve(NOT_STARTED)));
  }

  /**
   * `onDeadLetter: 'block-key'`: the entry's whole turn runs behind the earlier entries of its
   * key, outcome included, so the next entry of the key asks whether the key is blocked only once
   * this one's failure has blocked it. Run or hold first (one script): a held entry leaves the
   * PEL for its key's held stream. The blocker's success acks it and releases the next held entry
   * in one script; any other success is acked as usual.
   */
  private dispatchBlocking(
    blocks: KeyBlocks,
    entry: HeldEntry,
    decoded: DecodedEntry,
    ctx: RedisStreamsContext,
    key: string,
    started: number,
  ): void {
    const { stream, group } = this.owner;
    const args = ctx.getArgs();
    // ctx.ack() is refused: the blocker's ack must release the next held entry in the same script.
    const control = {
      get signal() {
        return entry.signal;
      },
      ack(): Promise<boolean> {
        throw new Error(CONSUMER_MESSAGES.blockKeyManualAck(entry.id, stream));
      },
    };
    const blockingCtx = new RedisStreamsContext([args[0], args[1], args[2], args[3], args[4], args[5], args[6], control]);
    const turn = async (): Promise<SettleOutcome> => {
      const allowed = await this.startingTurn(blocks, entry, key);
      if (allowed !== 'run' && allowed !== 'blocker') return allowed;
      try {
        entry.invoked = true;
        await runInTraceContext(decoded.headers, { stream, group, entryId: entry.id }, () =>
          untilFinished(() => this.rt.invoke(this.subscription, decoded, blockingCtx)),
        );
      } catch (err) {
        this.emitHandled(entry, started, false);
        return this.parking.fail(entry, err, key);
      }
      this.emitHandled(entry, started, true);
      return allowed === 'blocker' ? blocks.succeeded(entry, key) : this.succeeded(entry);
    };
    this.settleAfter(entry, this.keys.run(key, turn));
  }

  /** The handler's promise resolved; an Observable result is done only when it completes. */
  private handlerReturned(entry: HeldEntry, started: number, result: unknown): void {
    if (result === NOT_STARTED) return this.owner.settled(entry, 'unstarted');
    if (isObservable(result)) {
      lastValueFrom(result, { defaultValue: undefined }).then(
        () => this.handlerReturned(entry, started, undefined),
        (err: unknown) => this.handlerFailed(entry, started, err),
      );
      return;
    }
    this.emitHandled(entry, started, true);
    this.owner.settled(entry, this.succeeded(entry));
  }

  /** A handler succeeded: queue the ack unless the entry is not this consumer's to ack. */
  private succeeded(entry: HeldEntry): SettleOutcome {
    if (entry.lost) return 'lost';
    // Acked by the handler itself, or trimmed away (Redis dropped it from the PEL): nothing to ack.
    if (entry.acked || entry.trimmed) return 'acked';
    const { options, kind } = this.subscription;
    if (options.ackMode === 'manual' && kind === 'event') return 'left-pending';
    this.acks.add(entry.id, entry.readUnder);
    return 'acked';
  }

  private handlerFailed(entry: HeldEntry, started: number, err: unknown): void {
    this.emitHandled(entry, started, false);
    this.settleAfter(entry, this.parking.fail(entry, err));
  }

  private settleAfter(entry: HeldEntry, outcome: Promise<SettleOutcome>): void {
    outcome.then(
      (settled) => this.owner.settled(entry, settled),
      (err: unknown) => this.owner.settledUnexpectedly(entry, err),
    );
  }

  private orderingKeyOf(data: unknown): string | undefined {
    const { orderingKey } = this.subscription.options;
    if (orderingKey === undefined) return undefined;
    if (typeof orderingKey === 'function') return orderingKey(data);
    const value = typeof data === 'object' && data !== null ? (data as Record<string, unknown>)[orderingKey] : undefined;
    return value === undefined || value === null ? undefined : String(value);
  }

  private emitHandled(entry: HeldEntry, started: number, ok: boolean): void {
    if (started === 0 || this.rt.events.listenerCount('handled') === 0) return;
    const durationMs = performance.now() - started;
    const endToEndMs = Date.now() - Number.parseInt(entry.id, 10);
    try {
      this.rt.events.emit('handled', { ...this.owner.ref(entry), durationMs, endToEndMs, ok });
    } catch (err) {
      // A listener's bug must not keep the entry from being acked or retried.
      logSafely(this.rt, CONSUMER_MESSAGES.listenerThrew('handled', entry.id, (err as Error)?.stack ?? err));
    }
  }
}

/** Logs an error; a logger that throws must not keep an entry's slot occupied. */
export function logSafely(rt: Pick<ConsumerRuntime, 'logger'>, message: string): void {
  try {
    rt.logger.error(message);
  } catch {
    // Nothing left to report it to.
  }
}
