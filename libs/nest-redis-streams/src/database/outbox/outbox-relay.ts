import { type BeforeApplicationShutdown, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { lastValueFrom, type Observable } from 'rxjs';
import { StreamRecord } from '../../client/stream-record.js';
import type { SqlDatabase, Unlisten } from '../sql-database.interface.js';
import { OUTBOX_CHANNEL, OUTBOX_RELAY_DEFAULTS, type OutboxRelayOptions } from './outbox-relay-options.interface.js';
import {
  lockBatch,
  markFailed,
  markParked,
  markSent,
  type OutboxBacklog,
  type OutboxRow,
  publishableRuns,
  readBacklog,
} from './outbox-round.js';
import { isPermanentPublishError } from './errors/permanent-publish-error.js';

/** What the relay needs of `RedisStreamsClient`. */
export interface OutboxPublisher {
  emit(pattern: string, record: StreamRecord): Observable<unknown>;
}

/** What one relay round did. */
export interface RelayRoundResult {
  /** Rows locked by this round. */
  locked: number;
  published: number;
  /** Publishes that failed and may succeed later; those rows retry after a back-off. */
  failed: number;
  /**
   * Publishes that failed for good (`isPermanentPublishError`): those rows are parked until an
   * operator re-publishes or discards them, and later events of their key wait behind them.
   */
  parked: number;
  /** Rows held back behind an earlier unsent event of their partition key. */
  deferred: number;
}

/** Told about each publish, for metrics. */
export interface OutboxRelayObserver {
  published(lagMs: number): void;
  failed(): void;
  /** An event was parked (its publish failed for good). */
  parked?(): void;
}

/** The relay's own view of itself, for the health indicator. */
export interface OutboxRelayStatus {
  running: boolean;
  /** Whether LISTEN is active (false: polling only). */
  listening: boolean;
  /** When the last round finished without a database error (ms since epoch; 0 before the first). */
  lastRoundAt: number;
  /** The last database error of a round, cleared by a successful one. */
  lastError?: string;
  pollIntervalMs: number;
}

/**
 * Publishes `nrs_outbox` rows through `RedisStreamsClient` with `eventId` = the row's event id,
 * then marks them sent. A Nest provider: it starts on application bootstrap and stops before
 * shutdown. Several replicas run safely together (`FOR UPDATE SKIP LOCKED`, and a key's event
 * waits for every earlier event of its key). A crash between XADD and marking sent publishes
 * the event again, with the same event id (and so into the same partition): on Redis 8.6+ the
 * stream drops the copy (XADD IDMP, client option `idempotentWrites`); elsewhere consumers'
 * inboxes make it harmless. A publish that can never succeed (over `maxPayloadBytes`, WRONGTYPE,
 * NOPERM) parks its event in the table with the error instead of retrying it; later events of its
 * key wait behind it (per-key order) until `outbox.republishParked` or `outbox.discardParked`,
 * while every other key goes on.
 *
 * ```ts
 * { provide: OutboxRelay, inject: [RedisStreamsClient],
 *   useFactory: (client: RedisStreamsClient) => new OutboxRelay(pgDatabase(pool), client) }
 * ```
 */
export class OutboxRelay implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(OutboxRelay.name);
  private readonly options: Required<OutboxRelayOptions>;
  private readonly observers: OutboxRelayObserver[] = [];
  private loop: Promise<void> | null = null;
  private closing = false;
  private wakeUp: (() => void) | null = null;
  private notified = false;
  private unlisten: Unlisten | null = null;
  private lastRoundAt = 0;
  private lastError: string | undefined;

  constructor(
    private readonly db: SqlDatabase<any>,
    private readonly publisher: OutboxPublisher,
    options: OutboxRelayOptions = {},
  ) {
    this.options = {
      ...OUTBOX_RELAY_DEFAULTS,
      ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)),
    };
  }

  onApplicationBootstrap(): void {
    this.start();
  }

  beforeApplicationShutdown(): Promise<void> {
    return this.close();
  }

  /** Starts the publish loop (idempotent). */
  start(): void {
    if (this.loop || this.closing) return;
    this.loop = this.run();
  }

  /** Stops after the round in flight; idempotent. */
  async close(): Promise<void> {
    this.closing = true;
    this.wake();
    await this.loop;
    await this.stopListening();
  }

  /** Adds a metrics observer. */
  observe(observer: OutboxRelayObserver): () => void {
    this.observers.push(observer);
    return () => this.observers.splice(this.observers.indexOf(observer) >>> 0, 1);
  }

  status(): OutboxRelayStatus {
    return {
      running: this.loop !== null && !this.closing,
      listening: this.unlisten !== null,
      lastRoundAt: this.lastRoundAt,
      lastError: this.lastError,
      pollIntervalMs: this.options.pollIntervalMs,
    };
  }

  /** Unsent events, the age of the oldest one, and the parked ones. */
  backlog(): Promise<OutboxBacklog> {
    return this.db.transaction((tx) => readBacklog(this.db.executor(tx)));
  }

  /** One round: lock a batch, publish what may go in key order, mark sent or schedule retries, commit. */
  round(): Promise<RelayRoundResult> {
    return this.db.transaction(async (tx) => {
      const sql = this.db.executor(tx);
      const rows = await lockBatch(sql, this.options.batchSize);
      if (!rows.length) return { locked: 0, published: 0, failed: 0, parked: 0, deferred: 0 };
      const { runs, deferred } = await publishableRuns(sql, rows);
      const sent: Array<{ seq: string; entryId: string }> = [];
      const failures: Array<{ row: OutboxRow; error: string; permanent: boolean }> = [];
      // Keys in parallel (their XADDs share pipelines), each key's events one after another, so a
      // failed event stops its key instead of letting a later one overtake it.
      await Promise.all(
        runs.map(async (run) => {
          for (const row of run) {
            try {
              sent.push({
                seq: row.seq,
                entryId: String(await lastValueFrom(this.publisher.emit(row.stream, this.recordOf(row)))),
              });
              for (const o of this.observers) o.published(Date.now() - new Date(row.created_at).getTime());
            } catch (err) {
              const permanent = isPermanentPublishError(err);
              failures.push({ row, error: err instanceof Error ? `${err.name}: ${err.message}` : String(err), permanent });
              if (!permanent) for (const o of this.observers) o.failed();
              return;
            }
          }
        }),
      );
      await markSent(sql, sent);
      let parked = 0;
      for (const { row, error, permanent } of failures) {
        if (permanent) {
          parked += 1;
          this.logger.error(
            `Outbox event "${row.event_id}" for "${row.stream}" can never be published as it is (${error}); parked it` +
              (row.partition_key === null ? '' : `, and later events of key "${row.partition_key}" wait behind it`) +
              '. Fix the cause, then outbox.republishParked([id]), or outbox.discardParked([id]).',
          );
          for (const o of this.observers) o.parked?.();
          await markParked(sql, row.seq, error);
          continue;
        }
        const delay = Math.min(this.options.maxRetryDelayMs, this.options.retryDelayMs * 2 ** Math.min(row.attempts, 30));
        this.logger.warn(
          `Publishing outbox event "${row.event_id}" to "${row.stream}" failed (${error}); retrying in ${delay} ms.`,
        );
        await markFailed(sql, row.seq, delay, error);
      }
      return { locked: rows.length, published: sent.length, failed: failures.length - parked, parked, deferred };
    });
  }

  private recordOf(row: OutboxRow): StreamRecord {
    return new StreamRecord(row.payload, {
      eventId: row.event_id,
      headers: row.headers,
      partitionKey: row.partition_key ?? undefined,
    });
  }

  private async run(): Promise<void> {
    while (!this.closing) {
      if (this.options.listen && this.db.listen && !this.unlisten) await this.startListening();
      let more = false;
      try {
        const result = await this.round();
        this.lastRoundAt = Date.now();
        this.lastError = undefined;
        // A full batch that made progress: there is probably more right now.
        more = result.locked === this.options.batchSize && result.published > 0;
      } catch (err) {
        this.lastError = err instanceof Error ? err.message : String(err);
        this.logger.error(`Outbox relay round failed: ${this.lastError}; trying again in ${this.options.pollIntervalMs} ms.`);
      }
      if (!more && !this.closing) await this.sleep(this.options.pollIntervalMs);
    }
  }

  private sleep(ms: number): Promise<void> {
    if (this.notified) {
      this.notified = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.wake(), ms);
      this.wakeUp = () => {
        clearTimeout(timer);
        this.wakeUp = null;
        resolve();
      };
    });
  }

  private wake(): void {
    if (this.wakeUp) this.wakeUp();
    else this.notified = true;
  }

  private async startListening(): Promise<void> {
    try {
      this.unlisten = await this.db.listen!(
        OUTBOX_CHANNEL,
        () => this.wake(),
        (err) => {
          // Fall back to polling; the next round listens again.
          this.logger.warn(`Outbox relay lost its LISTEN connection (${err.message}); polling until it is back.`);
          void this.stopListening();
        },
      );
    } catch (err) {
      this.logger.warn(
        `Outbox relay could not LISTEN (${(err as Error).message}); polling every ${this.options.pollIntervalMs} ms.`,
      );
    }
  }

  private async stopListening(): Promise<void> {
    const unlisten = this.unlisten;
    this.unlisten = null;
    await unlisten?.().catch(() => undefined);
  }
}
