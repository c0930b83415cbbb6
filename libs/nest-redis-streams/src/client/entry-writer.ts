import type { ReadPacket } from '@nestjs/microservices';
import type { Redis } from 'ioredis';
import { aclUserOf } from '../redis/acl-hint.js';
import { describeConnection } from '../redis/connection.factory.js';
import type { IdmpWriter } from '../redis/idmp.js';
import type { StreamRetention } from '../trim/retention-options.interface.js';
import type { RetentionScheduler } from '../trim/retention-scheduler.js';
import { batchError } from './batch-failures.js';
import { CLIENT_MESSAGES } from './client.messages.js';
import { ClientClosedError } from './errors/client-closed.error.js';
import type { EmitBatchFailure } from './errors/emit-batch.error.js';
import { PublishFailedError } from './errors/publish-failed.error.js';
import type { EntryEncoder, RequestFields } from './entry-encoder.js';
import type { ResolvedClientOptions } from './resolve-client-options.js';
import { StreamRecord } from './stream-record.js';
import type { StreamRoute, StreamRoutes } from './stream-routes.js';
import { explainWriteError } from './write-errors.js';
import type { ClientWriteObserver } from './write-observer.interface.js';
import { XaddBatcher, type XaddOutcome } from './xadd-batcher.js';

/**
 * The client's write paths: one entry (`emit()`, a request) or a batch (`emitBatch()`), encoded,
 * queued on the XADD batcher of the open connection (connecting first when needed), and every
 * failure explained naming its stream. Also tells the write observer what was written.
 */
export class EntryWriter {
  /** Set by the client while it closes: writes then wait for a new connection, which it refuses. */
  closing = false;
  private batcher: XaddBatcher | null = null;
  /** XADD … IDMP when every node offers it (probed on connect) and idempotentWrites is on; null: plain XADDs. */
  private idmp: IdmpWriter | null = null;
  private observer: ClientWriteObserver | null = null;
  /** Streams whose retention the observer was told of (empty while nobody observes). */
  private readonly retentionReported = new Set<string>();

  constructor(
    private readonly options: ResolvedClientOptions,
    private readonly routes: StreamRoutes,
    private readonly encoder: EntryEncoder,
    private readonly retention: RetentionScheduler,
    /** The client's connect(): resolves once attach() ran, or fails. */
    private readonly connect: () => Promise<unknown>,
    /** The client's packet of one element of a batch (Nest 12 adds its dispatch hook's metadata). */
    private readonly packetOf: (pattern: unknown, data: unknown) => ReadPacket,
  ) {}

  /** Writes go to this connection from now on (a batcher of its own), with IDMP when given. */
  attach(commands: Redis, idmp: IdmpWriter | null): void {
    this.idmp = idmp;
    this.batcher = new XaddBatcher(commands, this.options.offlineTimeoutMs, () => this.observer);
  }

  /** Sends the writes still batched. */
  async drain(): Promise<void> {
    await this.batcher?.drain();
  }

  /** Forgets the connection (closed): the next write connects again. */
  detach(): void {
    this.batcher = this.idmp = null;
  }

  /** See RedisStreamsClient.observeWrites. */
  observe(observer: ClientWriteObserver | null): void {
    this.observer = observer;
    this.retentionReported.clear();
  }

  /** Writes one entry of `packet` to `stream`; resolves with its id once Redis stored it. */
  async write(packet: ReadPacket, stream: string, request?: RequestFields): Promise<string> {
    const route = this.routes.of(packet.pattern);
    const fields = this.encoder.encode(packet, stream, request);
    try {
      const batcher = this.batcher && !this.closing ? this.batcher : await this.connectedBatcher();
      const settingUp = this.idmp?.ready(stream);
      if (settingUp) await settingUp;
      const id = await batcher.add(stream, this.headOf(route, packet.data), fields);
      this.idmp?.written(stream);
      if (route.retention) this.retentionWritten(stream, route.retention);
      return id;
    } catch (err) {
      throw this.explain(err, stream);
    }
  }

  /** Writes one entry per item; see RedisStreamsClient.emitBatch. */
  async writeBatch(pattern: unknown, items: readonly unknown[]): Promise<string[]> {
    const route = this.routes.of(pattern);
    if (items.length === 0) return [];
    const streams = new Array<string>(items.length);
    const fields = new Array<string[]>(items.length);
    const invalid: EmitBatchFailure[] = [];
    for (let i = 0; i < items.length; i++) {
      const data = items[i];
      if (data === null || data === undefined) {
        invalid.push({ index: i, error: new PublishFailedError(CLIENT_MESSAGES.batchEntryNil(i, data), route.stream, false) });
        continue;
      }
      if (data instanceof StreamRecord && data.delivery) {
        invalid.push({ index: i, error: new PublishFailedError(CLIENT_MESSAGES.scheduleInBatch(i), route.stream, false) });
        continue;
      }
      const packet = this.packetOf(pattern, data);
      streams[i] = this.routes.streamFor(route, data);
      try {
        fields[i] = this.encoder.encode(packet, streams[i]);
      } catch (err) {
        invalid.push({ index: i, error: err as Error });
      }
    }
    if (invalid.length > 0) throw batchError(route.stream, new Array(items.length).fill(undefined), invalid, 'notEncoded');
    let outcomes: XaddOutcome[];
    try {
      // Queued at once when connected, like emit(): calls of one turn keep their order in the stream.
      const batcher = this.batcher && !this.closing ? this.batcher : await this.connectedBatcher();
      const idmp = this.idmp;
      // Awaited only when a window is being set: an await would let this turn's later writes overtake the batch.
      const settingUp = idmp ? [...new Set(streams)].map((s) => idmp.ready(s)).filter((p) => p !== null) : [];
      if (settingUp.length > 0) await Promise.all(settingUp);
      const heads = idmp === null ? this.routes.headOf(route) : items.map((data) => this.headOf(route, data));
      outcomes = await batcher.addAll(streams, heads, fields);
    } catch (err) {
      // Not connected (or closing): the same error for every entry.
      outcomes = new Array<XaddOutcome>(items.length).fill(err as Error);
    }
    return this.batchResult(route, streams, outcomes);
  }

  /** A failed write's error, explained: the stream, where Redis was, the fix. */
  explain(err: unknown, stream: string): unknown {
    return explainWriteError(err, {
      stream,
      where: describeConnection(this.options.connection),
      offlineTimeoutMs: this.options.offlineTimeoutMs,
      user: aclUserOf(this.options.connection),
    });
  }

  /** The ids of a sent batch, or an EmitBatchError naming each entry that was not stored. */
  private batchResult(route: StreamRoute, streams: string[], outcomes: XaddOutcome[]): string[] {
    const ids = new Array<string | undefined>(outcomes.length);
    const failures: EmitBatchFailure[] = [];
    // One cause shared by many entries (a lost connection) is explained once per stream.
    const explained = new Map<string, Map<Error, Error>>();
    for (let i = 0; i < outcomes.length; i++) {
      const outcome = outcomes[i];
      if (typeof outcome === 'string') {
        ids[i] = outcome;
        if (route.retention) this.retentionWritten(streams[i], route.retention);
        continue;
      }
      ids[i] = undefined;
      let byCause = explained.get(streams[i]);
      if (!byCause) explained.set(streams[i], (byCause = new Map()));
      let error = byCause.get(outcome);
      if (!error) byCause.set(outcome, (error = this.explain(outcome, streams[i]) as Error));
      failures.push({ index: i, error });
    }
    if (failures.length > 0) throw batchError(route.stream, ids, failures, 'notStored');
    return ids as string[];
  }

  /**
   * XADD arguments of one entry: with an explicit event id on a server with IDMP (8.6+), the
   * stream itself drops a re-sent copy (an emit retried after a lost reply) and answers the first
   * entry's id; elsewhere a copy is written and the consumers' inbox absorbs it.
   */
  private headOf(route: StreamRoute, data: unknown): ReadonlyArray<string | number> {
    const head = this.routes.headOf(route);
    return this.idmp ? this.idmp.head(data instanceof StreamRecord ? data.eventId : undefined, head) : head;
  }

  /** The batcher once connected; connects first when needed. */
  private async connectedBatcher(): Promise<XaddBatcher> {
    await this.connect();
    if (!this.batcher) throw new ClientClosedError(CLIENT_MESSAGES.closing);
    return this.batcher;
  }

  /** Starts the periodic retention work of a stream written to, and tells the observer of it once. */
  private retentionWritten(stream: string, retention: StreamRetention): void {
    this.retention.watch(stream, retention);
    if (this.observer && !this.retentionReported.has(stream)) {
      this.retentionReported.add(stream);
      this.observer.retentionOf(stream, retention);
    }
  }
}
