import { Logger, type OnApplicationShutdown } from '@nestjs/common';
import { ClientProxy, type ReadPacket, type WritePacket } from '@nestjs/microservices';
import type { Redis } from 'ioredis';
import { type Observable, catchError, throwError } from 'rxjs';
import { type RedisStreamsEvents, RedisStreamsStatus } from '../events/redis-streams.events.js';
import { probeKeyNear } from '../keys/index.js';
import { probeCapabilities } from '../redis/capabilities.js';
import { watchStatus } from '../redis/connect.js';
import { IdmpWriter, resolveIdempotentWrites } from '../redis/idmp.js';
import { RetentionScheduler } from '../trim/retention-scheduler.js';
import { StreamTrimmer } from '../trim/stream-trimmer.service.js';
import { describeValue } from './batch-failures.js';
import { ClientConnections } from './client-connections.js';
import type { RedisStreamsClientOptions } from './client-options.interface.js';
import { ClientRequests } from './client-requests.js';
import { CLIENT_MESSAGES } from './client.messages.js';
import { EntryEncoder } from './entry-encoder.js';
import { EntryWriter } from './entry-writer.js';
import { type DeliveryTime, InvalidDelayError, dueTimeOf } from '../errors/invalid-delay.error.js';
import { ScheduledWrites } from './scheduled-writes.js';
import { StreamRecord } from './stream-record.js';
import { ClientClosedError } from './errors/client-closed.error.js';
import { ConnectionFailedError } from './errors/connection-failed.error.js';
import { type ResolvedClientOptions, resolveClientOptions } from './resolve-client-options.js';
import { settledObservable } from './settled-observable.js';
import { StreamRoutes } from './stream-routes.js';
import type { ClientWriteObserver } from './write-observer.interface.js';

export type { ClientWriteObserver } from './write-observer.interface.js';

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
  private readonly routes: StreamRoutes;
  private readonly trimmer = new StreamTrimmer(() => this.connect());
  private readonly retention = new RetentionScheduler(this.trimmer);
  private readonly connections: ClientConnections;
  /** emit(), emitBatch() and the requests' writes. */
  private readonly writer: EntryWriter;
  private readonly requests: ClientRequests;
  /** Delayed emit()s: held in the stream's schedule until due. */
  private readonly scheduled: ScheduledWrites;
  private commands: Redis | null = null;
  private connecting: Promise<Redis> | null = null;
  private closing: Promise<void> | null = null;

  constructor(options: RedisStreamsClientOptions = {}) {
    super();
    this.options = resolveClientOptions(options);
    this.routes = new StreamRoutes(this.options, (pattern) => this.normalizePattern(pattern as string));
    this.connections = new ClientConnections(this.options.connection);
    const encoder = new EntryEncoder(this.options.serializer, this.options.maxPayloadBytes);
    const connect = () => this.connect();
    this.writer = new EntryWriter(this.options, this.routes, encoder, this.retention, connect, (pattern, data) =>
      this.packetOf(pattern, data),
    );
    this.scheduled = new ScheduledWrites(this.options, this.routes, encoder, connect);
    this.requests = new ClientRequests(this.options, connect, this.connections, this.writer, this.logger);
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
  replyStream(): Promise<string | null> {
    return this.requests.replyStream();
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
    this.writer.observe(observer);
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
    this.closing ??= this.shutdown().finally(() => {
      this.closing = null;
      this.writer.closing = false;
    });
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
    this.connections.on(event, callback as unknown as (...args: unknown[]) => void);
  }

  /**
   * Like ClientProxy.emit: writes at once (hot), emits the entry id once Redis stored it, fails
   * naming the stream and the fix. Nest's own chain of operators per call is left out: it was a
   * third of a busy producer's CPU.
   *
   * With `{ delayMs }` or `{ deliverAt }` (here or in a StreamRecord's options) the entry is held
   * in the stream's schedule and a server's mover adds it once due; it then emits the entry's
   * event id (the key of `cancelScheduled()`), not a stream entry id. A time already past, or a
   * delay of 0, writes at once. See docs/client.md, "Delayed delivery".
   */
  override emit<TResult = string, TInput = unknown>(
    pattern: unknown,
    data: TInput,
    delivery?: DeliveryTime,
  ): Observable<TResult> {
    // Nest's own answer (InvalidMessageException) for a missing pattern or data.
    if (pattern === null || pattern === undefined || data === null || data === undefined) return super.emit(pattern, data);
    if (delivery !== undefined && (typeof delivery !== 'object' || delivery === null)) {
      return throwError(() => new InvalidDelayError(CLIENT_MESSAGES.deliveryNotObject(describeValue(delivery)), delivery));
    }
    const record =
      delivery === undefined
        ? data
        : data instanceof StreamRecord
          ? data.withDelivery(delivery)
          : new StreamRecord(data, delivery);
    return settledObservable(this.dispatchEvent<TResult>(this.packetOf(pattern, record)));
  }

  /**
   * Cancels a delayed entry of `pattern` that is still scheduled, by its event id (in whichever
   * partition holds it). Resolves true when it was scheduled and is not any more; false when no
   * entry with that id waits (never scheduled, cancelled, or already moved into the stream).
   */
  cancelScheduled(pattern: unknown, eventId: string): Promise<boolean> {
    return this.scheduled.cancel(pattern, eventId);
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
    return settledObservable(this.writer.writeBatch(pattern, data));
  }

  /** Like ClientProxy.send; a connection failure names the stream. */
  override send<TResult = unknown, TInput = unknown>(pattern: unknown, data: TInput): Observable<TResult> {
    return super
      .send<TResult, TInput>(pattern, data)
      .pipe(catchError((err: unknown) => throwError(() => this.explainFor(err, pattern))));
  }

  /** Nest's request path: registers the request, then writes it with this client's reply stream. */
  protected publish(packet: ReadPacket, callback: (packet: WritePacket) => void): () => void {
    return this.requests.publish(packet, this.streamFor(packet), callback);
  }

  /** Nest's event path: resolves with the entry id once Redis stored the entry. */
  protected dispatchEvent<T = string>(packet: ReadPacket): Promise<T> {
    const stream = this.streamFor(packet);
    const { data } = packet;
    if (data instanceof StreamRecord && data.delivery) {
      let dueAt: number | null;
      try {
        dueAt = dueTimeOf(data.delivery, CLIENT_MESSAGES.scheduleOf(stream));
      } catch (err) {
        return Promise.reject(err as Error);
      }
      if (dueAt !== null) {
        // A delay is counted from Redis' clock where the entry is stored; deliverAt is the caller's own time.
        const { delayMs } = data.delivery;
        const due = delayMs === undefined ? dueAt : { inMs: Math.ceil(delayMs) };
        return this.scheduled.schedule(packet, stream, data, due).catch((err: unknown) => {
          throw this.writer.explain(err, stream);
        }) as Promise<T>;
      }
    }
    return this.writer.write(packet, stream) as Promise<T>;
  }

  /** Nest 12 builds packets with its dispatch hook (e.g. tracing's metadata); Nest 11 has neither. */
  private packetOf(pattern: unknown, data: unknown): ReadPacket {
    const create = (this as unknown as { createPacket?: (pattern: unknown, data: unknown) => ReadPacket }).createPacket;
    return create ? create.call(this, pattern, data) : { pattern, data };
  }

  private explainFor(err: unknown, pattern: unknown): unknown {
    return err instanceof ConnectionFailedError ? this.writer.explain(err, this.streamOf(pattern)) : err;
  }

  private async open(): Promise<Redis> {
    const commands = await this.connections.open('commands', { maxRetriesPerRequest: this.options.maxRetriesPerRequest });
    watchStatus(commands, this._status$);
    this.commands = commands;
    // Probed before the first write, so every write of one turn takes the same path (and keeps its order).
    const idmpOptions = resolveIdempotentWrites(this.options.idempotentWrites);
    const caps =
      idmpOptions && (await probeCapabilities(commands, probeKeyNear(`${this.options.keyPrefix}nrs`)).catch(() => null));
    this.writer.attach(commands, caps?.all.idmp ? new IdmpWriter(commands, idmpOptions!, (m) => this.logger.warn(m)) : null);
    this._status$.next(RedisStreamsStatus.CONNECTED);
    return commands;
  }

  private async shutdown(): Promise<void> {
    this.writer.closing = true;
    await this.retention.stop();
    this.requests.failAll();
    // A connect or reply-stream start still running finishes first, so its connection is closed too.
    const commands = await this.connecting?.catch(() => null);
    await this.requests.stopReplies();
    await this.writer.drain();
    await this.connections.closeAll(commands);
    this.requests.reset();
    this.writer.detach();
    this.commands = this.connecting = null;
    this._status$.next(RedisStreamsStatus.DISCONNECTED);
  }
}
