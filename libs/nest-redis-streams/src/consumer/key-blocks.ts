import { ackAndRelease, markKeyFailing, runOrHold } from '../dead-letter/blocked-key-scripts.js';
import { FENCED } from '../ownership/fenced-writes.js';
import type { ConsumerRuntime } from './consumer-runtime.interface.js';
import { CONSUMER_MESSAGES } from './consumer.messages.js';
import type { EntryWrites } from './entry-writes.js';
import type { HeldEntry } from './held-entry.js';
import type { SettleOutcome } from './slot-owner.interface.js';

/** Whose turn it is: 'run' (the key is not blocked), 'blocker' (it is, and waits for this entry). */
export type KeyTurn = 'run' | 'blocker';

/**
 * The Redis side of `onDeadLetter: 'block-key'` for one consumer (scripts in redis/lua/block-key.ts):
 * asks whether an entry of a key may run or must be held, blocks a key when an entry fails, and
 * on the blocker's success acks it and releases the next held entry. Each is one script, with
 * the same owner check and fence as the consumer's other writes. Built only for block-key handlers.
 */
export class KeyBlocks {
  constructor(
    private readonly writes: EntryWrites,
    private readonly rt: Pick<ConsumerRuntime, 'commands' | 'logger'>,
  ) {}

  /** Run or hold: a turn, or how the entry's turn ended without running (held → `skipped`). */
  async turn(entry: HeldEntry, key: string): Promise<KeyTurn | SettleOutcome> {
    try {
      let reply = await runOrHold(this.rt.commands, this.writes, entry.id, key);
      // Trimmed since its read while its key is blocked: the fields read are held in its place.
      if (reply === 'trimmed') reply = await runOrHold(this.rt.commands, this.writes, entry.id, key, entry.fields ?? []);
      if (reply === 'run' || reply === 'blocker') return reply;
      if (reply === 'held') return 'skipped';
      // No generation held, or Redis refused it: it stays pending for the partition's owner.
      return reply === 'lost' ? 'lost' : 'unstarted';
    } catch (err) {
      this.warn(entry, key, 'ask whether the key is blocked', err);
      return 'left-pending';
    }
  }

  /**
   * The entry failed and will be retried: its key is blocked by it until it succeeds or is
   * released. Null: go on with the retry; else how the entry's turn ends here ('lost': another
   * consumer owns it now, e.g. this one was paused past min-idle; 'left-pending': fenced).
   */
  async markFailing(entry: HeldEntry, key: string): Promise<SettleOutcome | null> {
    try {
      const reply = await markKeyFailing(this.rt.commands, this.writes, entry.id, key);
      if (reply === FENCED) return 'left-pending';
      return reply === null ? 'lost' : null;
    } catch (err) {
      // The retry still goes ahead: the entry stays pending, and a later entry of its key may
      // run before it, as without block-key.
      this.warn(entry, key, 'block the key', err);
      return null;
    }
  }

  /** The entry its key's block waited for succeeded: acked, and the next held entry released. */
  async succeeded(entry: HeldEntry, key: string): Promise<SettleOutcome> {
    if (entry.lost) return 'lost';
    try {
      const reply = await ackAndRelease(this.rt.commands, this.writes, entry.id, key, entry.trimmed);
      if (reply === FENCED) return 'left-pending';
      return reply === null ? 'lost' : 'acked';
    } catch (err) {
      this.warn(entry, key, 'ack and release the next held entry', err);
      return 'left-pending';
    }
  }

  private warn(entry: HeldEntry, key: string, step: string, err: unknown): void {
    const cause = err instanceof Error ? err.message : String(err);
    this.rt.logger.warn(CONSUMER_MESSAGES.keyBlockFailed(entry.id, this.writes.stream, key, step, cause));
  }
}
