import { randomUUID } from 'node:crypto';
import { Logger, type OnApplicationShutdown } from '@nestjs/common';
import { ClientProxy, type ReadPacket, type WritePacket } from '@nestjs/microservices';
import type { Redis, RedisOptions } from 'ioredis';
import { type Observable, catchError, throwError } from 'rxjs';
import type { ReplyPacket } from '../codec/reply.js';
import { defaultConsumerName } from '../constants.js';
import { type RedisStreamsEvents, RedisStreamsStatus } from '../events/redis-streams.events.js';
import { connectOrExplain, quitWithin, watchStatus } from '../redis/connect.js';
import { createRedisConnection, describeConnection } from '../redis/connection.factory.js';
import { readGroupBacklogs } from '../trim/group-backlog.js';
import type { StreamRetention } from '../trim/retention-options.interface.js';
import { RetentionScheduler } from '../trim/retention-scheduler.js';
import { StreamTrimmer } from '../trim/stream-trimmer.service.js';
import type { RedisStreamsClientOptions } from './client-options.interface.js';
import { REPLY_STREAM } from './client.constants.js';
import { CLIENT_MESSAGES } from './client.messages.js';
import { ClientClosedError } from './errors/client-closed.error.js';
import { ConnectionFailedError } from './errors/connection-failed.error.js';
import type { EmitBatchFailure } from './errors/emit-batch.error.js';
import { NoMessageHandlerError } from './errors/no-message-handler.error.js';
import { PublishFailedError } from './errors/publish-failed.error.js';
import { RequestTimeoutError } from './errors/request-timeout.error.js';
import { PendingRequests } from './pending-requests.js';
import { ReplyReader } from './reply-reader.js';
import { type ResolvedClientOptions, resolveClientOptions } from './resolve-client-options.js';
import { batchError, describeValue } from './batch-failures.js';
import { EntryEncoder, type RequestFields } from './entry-encoder.js';
import { settledObservable } from './settled-observable.js';
import { type StreamRoute, StreamRoutes } from './stream-routes.js';
import { aclUserOf } from '../redis/acl-hint.js';
import { probeCapabilities } from '../redis/capabilities.js';
import { probeKeyNear } from '../keys/index.js';
import { IdmpWriter, resolveIdempotentWrites } from '../redis/idmp.js';
import { StreamRecord } from './stream-record.js';
import { explainWriteError } from './write-errors.js';
import type { ClientWriteObserver } from './write-observer.interface.js';
import { XaddBatcher, type XaddOutcome } from './xadd-batcher.js';

export type { ClientWriteObserver } from './write-observer.interface.js';

type Listener = (...args: unknown[]) => void;

/**
 * Nest client for Redis Streams. `emit(pattern, data)` appends an entry to the stream
 * `<keyPrefix><pattern>` and emits its id once Redis stored it; `send(pattern, data)` is a request
 * to the `@MessagePattern` handler of that stream, answered on this client's own reply stream.
 * Connects on first use, like Nest's other clients.
 *
 * A request to a stream that no consumer group reads fails at once (NoMessageHandlerError); one
 * to a stream whose group has no live `@MessagePattern` consumer (service down, or only
 * `@EventPattern` handlers in that group) is stored and fails after `requestTimeoutMs`.
 *
 * @example
 * ```ts
 * const client = new RedisStreamsClient({ connection: process.env.REDIS_URL });
 * const id = await lastValueFrom(client.emit('orders', { id: 'o-1', amount: 42 }));
 * const ids = await lastValueFrom(client.emitBatch('orders', [{ id: 'o-2' }, { id: 'o-3' }]));
 * const receipt = await lastValueFrom(client.send('payments.charge', { orderId: 'o-1' }));
 * ```
 * @publicApi
 */
export class RedisStreamsClient extends ClientProxy<RedisStreamsEvents, RedisStreamsStatus> implements OnApplicationShutdown {
  private readonly logger = new Logger(RedisStreamsClient.name);
  /** The options with every default applied. */
  readonly options: ResolvedClientOptions;
  private readonly requests: PendingRequests;
  private readonly encoder: EntryEncoder;
  private readonly routes: StreamRoutes;
  private readonly trimmer = new StreamTrimmer(() => this.connect());
  private readonly retention = new RetentionScheduler(this.trimmer);
  private readonly listeners: Array<[event: string, listener: Listener]> = [];
  private readonly connections = new Set<Redis>();
  /** Streams known to have a consumer group, so requests to them can be answered. */
  private readonly readStreams = new Set<string>();
  /** The check in flight per stream, shared by the requests that arrive while it runs. */
  private readonly groupChecks = new Map<string, Promise<void>>();
  private observer: ClientWriteObserver | null = null;
  /** Streams whose retention the observer was told of (empty while nobody observes). */
  private readonly retentionReported = new Set<string>();
  private commands: Redis | null = null;
  private batcher: XaddBatcher | null = null;
  /** XADD … IDMP when every node offers it (probed on connect) and idempotentWrites is on; null: plain XADDs. */
  private idmp: IdmpWriter | null = null;
  private connecting: Promise<Redis> | null = null;
  private replies: Promise<ReplyReader> | null = null;
  private closing: Promise<void> | null = null;

  constructor(options: RedisStreamsClientOptions = {}) {
    super();
    this.options = resolveClientOptions(options);
    this.requests = new PendingRequests(
      this.options.requestTimeoutMs,
      (stream) => new RequestTimeoutError(CLIENT_MESSAGES.requestTimeout(stream, this.options.requestTimeoutMs), stream),
    );
    this.encoder = new EntryEncoder(this.options.serializer, this.options.maxPayloadBytes);
    this.routes = new StreamRoutes(this.options, (pattern) => this.normalizePattern(pattern as string));
  }

  /** Requests sent and still waiting for their (last) reply. */
  get pendingRequestCount(): number {
    return this.requests.size;
  }

  /** The trimmer on this client's connection (safe trims, MAXLEN backlog checks). */
  get streamTrimmer(): StreamTrimmer {
    return this.trimmer;
  }

  /** Stream key of `pattern`: the key prefix plus Nest's normalized pattern. */
  streamOf(pattern: unknown): string {
    return this.routes.of(pattern).stream;
  }

  /**
   * Stream an entry of `packet` goes to: the pattern's stream, or one of its partitions (by the
   * record's partitionKey, round-robin without one).
   */
  streamFor(packet: ReadPacket): string {
    return this.routes.streamFor(this.routes.of(packet.pattern), packet.data);
  }

  /** Key of this client's reply stream once a `send()` created it, else null. */
  async replyStream(): Promise<string | null> {
    return this.replies ? (await this.replies).stream : null;
  }

  /** Runs the periodic retention work (safe trims, backlog checks) of every stream written so far, now. */
  runRetentionNow(): Promise<void> {
    return this.retention.runNow();
  }

  /**
   * Tells `observer` each XADD's duration and each stream's retention (used by
   * `RedisStreamsMetrics.attachClient`); null stops. One observer at a time: a new one replaces
   * the last, and hears every stream's retention again on its next write.
   */
  observeWrites(observer: ClientWriteObserver | null): void {
    this.observer = observer;
    this.retentionReported.clear();
  }

  /** Connects (once; concurrent calls share it) and resolves with the command connection. */
  connect(): Promise<Redis> {
    if (this.closing) return Promise.reject(new ClientClosedError(CLIENT_MESSAGES.closing));
    this.connecting ??= this.open().catch((err: unknown) => {
      // A failed start must not stick: the next emit or send tries again.
      this.connecting = null;
      throw err;
    });
    return this.connecting;
  }

  /**
   * Fails waiting requests, stops the reply reader and deletes the reply stream, sends the
   * writes still batched, then disconnects. Concurrent calls share one close; the client can
   * connect again afterwards.
   */
  close(): Promise<void> {
    this.closing ??= this.shutdown().finally(() => (this.closing = null));
    return this.closing;
  }

  /** Nest calls it on shutdown for clients provided by RedisStreamsModule or ClientsModule. */
  onApplicationShutdown(): Promise<void> {
    return this.close();
  }

  /** The command connection (XADD, XINFO...). */
  unwrap<T = Redis>(): T {
    if (!this.commands) throw new Error(CLIENT_MESSAGES.notConnected);
    return this.commands as unknown as T;
  }

  /** Forwards events of the ioredis connections, present and future. */
  override on<
    K extends keyof RedisStreamsEvents = keyof RedisStreamsEvents,
    C extends RedisStreamsEvents[K] = RedisStreamsEvents[K],
  >(event: K, callback: C): void {
    const listener = callback as unknown as Listener;
    this.listeners.push([event, listener]);
    for (const connection of this.connections) connection.on(event, listener);
  }

  /**
   * Like ClientProxy.emit: writes at once (hot), emits the entry id once Redis stored it, fails
   * naming the stream and the fix. Nest's own chain of operators per call is left out: it was a
   * third of a busy producer's CPU.
   */
  override emit<TResult = string, TInput = unknown>(pattern: unknown, data: TInput): Observable<TResult> {
    // Nest's own answer (InvalidMessageException) for a missing pattern or data.
    if (pattern === null || pattern === undefined || data === null || data === undefined) return super.emit(pattern, data);
    return settledObservable(this.dispatchEvent<TResult>(this.packetOf(pattern, data)));
  }

  /**
   * Emits one entry per element of `data` (plain values or StreamRecords, each with its own event
   * id, headers and partition key), sent in pipelines with the other writes of this event-loop
   * turn: the bulk form of `emit()`, several times cheaper per entry than as many `emit()`s.
   * Emits the ids in the order of `data`, then completes; hot like `emit()`.
   *
   * Fails with EmitBatchError naming each failed entry by its index: when any entry cannot be
   * encoded (null, not serializable, over `maxPayloadBytes`) nothing is written; when Redis
   * refuses or loses some entries, the others are stored and their ids are in `error.ids`.
   */
  emitBatch<TInput = unknown>(pattern: unknown, data: readonly TInput[]): Observable<string[]> {
    if (pattern === null || pattern === undefined) return super.emit(pattern, data);
    if (!Array.isArray(data)) return throwError(() => new TypeError(CLIENT_MESSAGES.batchNotArray(describeValue(data))));
    return settledObservable(this.writeBatch(pattern, data));
  }

  /** Like ClientProxy.send; a connection failure names the stream. */
  override send<TResult = unknown, TInput = unknown>(pattern: unknown, data: TInput): Observable<TResult> {
    return super
      .send<TResult, TInput>(pattern, data)
      .pipe(catchError((err: unknown) => throwError(() => this.explainFor(err, pattern))));
  }

  /** Nest's request path: registers the request, then writes it with this client's reply stream. */
  protected publish(packet: ReadPacket, callback: (packet: WritePacket) => void): () => void {
    const correlationId = randomUUID();
    const stream = this.streamFor(packet);
    // The moment this request's timeout fires: past it the caller has been told it failed, so a
    // server that reads it later (it was down, or backlogged) must not run it.
    const deadline = Date.now() + this.options.requestTimeoutMs;
    // Registered before the write: the reply can be read before the XADD's own reply arrives.
    this.requests.add(correlationId, stream, callback);
    this.request(packet, stream, correlationId, deadline).catch((err: unknown) =>
      this.requests.fail(correlationId, explainWriteError(err, this.writeContext(stream))),
    );
    return () => this.requests.remove(correlationId);
  }

  /** Nest's event path: resolves with the entry id once Redis stored the entry. */
  protected dispatchEvent<T = string>(packet: ReadPacket): Promise<T> {
    return this.write(packet, this.streamFor(packet)) as Promise<T>;
  }

  /** Nest 12 builds packets with its dispatch hook (e.g. tracing's metadata); Nest 11 has neither. */
  private packetOf(pattern: unknown, data: unknown): ReadPacket {
    const create = (this as unknown as { createPacket?: (pattern: unknown, data: unknown) => ReadPacket }).createPacket;
    return create ? create.call(this, pattern, data) : { pattern, data };
  }

  private async request(packet: ReadPacket, stream: string, correlationId: string, deadline: number): Promise<void> {
    const replies = await this.replyReader();
    await this.requireConsumerGroup(stream);
    // The caller may have given up (unsubscribed, timed out) meanwhile: then nothing is written.
    if (!this.requests.has(correlationId)) return;
    await this.write(packet, stream, { replyTo: replies.stream, correlationId, deadline });
  }

  private async write(packet: ReadPacket, stream: string, request?: RequestFields): Promise<string> {
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
      throw explainWriteError(err, this.writeContext(stream));
    }
  }

  private async writeBatch(pattern: unknown, items: readonly unknown[]): Promise<string[]> {
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
      if (!error) byCause.set(outcome, (error = explainWriteError(outcome, this.writeContext(streams[i])) as Error));
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

  /**
   * Requests to a stream that no group reads would wait for their timeout: the server has no
   * handler to say so (it never reads that stream). Checked once per stream, before writing.
   */
  private requireConsumerGroup(stream: string): Promise<void> {
    if (this.readStreams.has(stream)) return Promise.resolve();
    // One check for a burst: 1,000 requests sent at once to a new stream made 1,000 XINFO round
    // trips before the first write, and on a loaded machine the last ones timed out unwritten.
    let check = this.groupChecks.get(stream);
    if (!check) {
      check = this.checkConsumerGroup(stream).finally(() => this.groupChecks.delete(stream));
      this.groupChecks.set(stream, check);
    }
    return check;
  }

  private async checkConsumerGroup(stream: string): Promise<void> {
    const groups = await readGroupBacklogs(await this.connect(), stream);
    if (groups.length === 0) throw new NoMessageHandlerError(CLIENT_MESSAGES.noMessageHandler(stream), stream);
    this.readStreams.add(stream);
  }

  private writeContext(stream: string) {
    return {
      stream,
      where: describeConnection(this.options.connection),
      offlineTimeoutMs: this.options.offlineTimeoutMs,
      user: aclUserOf(this.options.connection),
    };
  }

  private explainFor(err: unknown, pattern: unknown): unknown {
    return err instanceof ConnectionFailedError ? explainWriteError(err, this.writeContext(this.streamOf(pattern))) : err;
  }

  private async open(): Promise<Redis> {
    const commands = await this.openConnection('commands', { maxRetriesPerRequest: this.options.maxRetriesPerRequest });
    watchStatus(commands, this._status$);
    this.commands = commands;
    // Probed before the first write, so every write of one turn takes the same path (and keeps its order).
    const idmpOptions = resolveIdempotentWrites(this.options.idempotentWrites);
    const caps =
      idmpOptions && (await probeCapabilities(commands, probeKeyNear(`${this.options.keyPrefix}nrs`)).catch(() => null));
    this.idmp = caps?.all.idmp ? new IdmpWriter(commands, idmpOptions!, (m) => this.logger.warn(m)) : null;
    this.batcher = new XaddBatcher(commands, this.options.offlineTimeoutMs, () => this.observer);
    this._status$.next(RedisStreamsStatus.CONNECTED);
    return commands;
  }

  private async openConnection(role: string, overrides: RedisOptions): Promise<Redis> {
    const redis = createRedisConnection(this.options.connection, `client:${role}:${defaultConsumerName()}`, {
      // After a refused connect ioredis arms a timer to destroy a socket that is already closed;
      // its default 2 s would keep a process (or a test run) alive that long after the failure.
      disconnectTimeout: 200,
      ...overrides,
    });
    for (const [event, listener] of this.listeners) redis.on(event, listener);
    this.connections.add(redis);
    try {
      await connectOrExplain(redis, this.options.connection);
    } catch (err) {
      this.connections.delete(redis);
      throw new ConnectionFailedError((err as Error).message, { cause: err });
    }
    return redis;
  }

  private replyReader(): Promise<ReplyReader> {
    this.replies ??= this.startReplies().catch((err: unknown) => {
      this.replies = null;
      throw err;
    });
    return this.replies;
  }

  private async startReplies(): Promise<ReplyReader> {
    const commands = await this.connect();
    // XREAD BLOCK holds its connection, so replies get their own; it waits out outages for ever.
    const reader = await this.openConnection('replies', { maxRetriesPerRequest: null });
    const stream = `${this.options.keyPrefix}${REPLY_STREAM.infix}${defaultConsumerName()}:${randomUUID()}`;
    const replies = new ReplyReader(
      stream,
      commands,
      reader,
      this.options.deserializer,
      (packet) => this.onReply(packet),
      this.logger,
    );
    try {
      await replies.start();
    } catch (err) {
      this.connections.delete(reader);
      reader.disconnect();
      throw err;
    }
    return replies;
  }

  private onReply({ correlationId, ...packet }: ReplyPacket): void {
    if (!this.requests.deliver(correlationId, packet)) {
      this.logger.debug(`Reply for request ${correlationId} arrived after it ended (timed out or cancelled); dropped.`);
    }
  }

  private async shutdown(): Promise<void> {
    await this.retention.stop();
    this.requests.failAll((stream) => new ClientClosedError(CLIENT_MESSAGES.closedBeforeReply(stream)));
    // A connect or reply-stream start still running finishes first, so its connection is closed too.
    const commands = await this.connecting?.catch(() => null);
    const replies = await this.replies?.catch(() => null);
    if (replies) {
      await replies
        .stop()
        .catch((err: Error) => this.logger.warn(CLIENT_MESSAGES.replyStreamNotDeleted(replies.stream, err.message)));
    }
    await this.batcher?.drain();
    for (const connection of this.connections) {
      if (connection === commands) continue;
      connection.disconnect();
    }
    if (commands) await quitWithin(commands);
    this.connections.clear();
    this.readStreams.clear();
    this.commands = this.batcher = this.connecting = this.replies = this.idmp = null;
    this._status$.next(RedisStreamsStatus.DISCONNECTED);
  }
}
