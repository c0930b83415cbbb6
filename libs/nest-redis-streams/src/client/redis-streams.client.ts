import { randomUUID } from 'node:crypto';
import { Logger, type OnApplicationShutdown } from '@nestjs/common';
import { ClientProxy, type ReadPacket, type WritePacket } from '@nestjs/microservices';
import type { Redis, RedisOptions } from 'ioredis';
import { type Observable, catchError, throwError } from 'rxjs';
import { encodeEnvelope } from '../codec/envelope.js';
import type { ReplyPacket } from '../codec/reply.js';
import { defaultConsumerName } from '../constants.js';
import { type RedisStreamsEvents, RedisStreamsStatus } from '../events/redis-streams.events.js';
import { connectOrExplain, quitWithin, watchStatus } from '../redis/connect.js';
import { createRedisConnection, describeConnection } from '../redis/connection.factory.js';
import { partitionOf, partitionStream } from '../server/partitions.js';
import { readGroupBacklogs } from '../trim/group-backlog.js';
import type { StreamRetention } from '../trim/retention-options.interface.js';
import { RetentionScheduler } from '../trim/retention-scheduler.js';
import { xaddTrimArgs } from '../trim/retention.js';
import { StreamTrimmer } from '../trim/stream-trimmer.service.js';
import type { RedisStreamsClientOptions } from './client-options.interface.js';
import { REPLY_STREAM } from './client.constants.js';
import { CLIENT_MESSAGES } from './client.messages.js';
import { ClientClosedError } from './errors/client-closed.error.js';
import { ConnectionFailedError } from './errors/connection-failed.error.js';
import { NoMessageHandlerError } from './errors/no-message-handler.error.js';
import { PayloadTooLargeError } from './errors/payload-too-large.error.js';
import { PublishFailedError } from './errors/publish-failed.error.js';
import { RequestTimeoutError } from './errors/request-timeout.error.js';
import { PendingRequests } from './pending-requests.js';
import { ReplyReader } from './reply-reader.js';
import { type ResolvedClientOptions, resolveClientOptions } from './resolve-client-options.js';
import { StreamRecord, envelopeOf } from './stream-record.js';
import { aclUserOf } from '../redis/acl-hint.js';
import { explainWriteError } from './write-errors.js';
import type { ClientWriteObserver } from './write-observer.interface.js';
import { XaddBatcher } from './xadd-batcher.js';

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
 * const receipt = await lastValueFrom(client.send('payments.charge', { orderId: 'o-1' }));
 * ```
 * @publicApi
 */
export class RedisStreamsClient extends ClientProxy<RedisStreamsEvents, RedisStreamsStatus> implements OnApplicationShutdown {
  private readonly logger = new Logger(RedisStreamsClient.name);
  /** The options with every default applied. */
  readonly options: ResolvedClientOptions;
  private readonly requests: PendingRequests;
  private readonly trimmer = new StreamTrimmer(() => this.connect());
  private readonly retention = new RetentionScheduler(this.trimmer);
  private readonly listeners: Array<[event: string, listener: Listener]> = [];
  private readonly connections = new Set<Redis>();
  /** Streams known to have a consumer group, so requests to them can be answered. */
  private readonly readStreams = new Set<string>();
  private nextPartition = 0;
  private observer: ClientWriteObserver | null = null;
  /** Streams whose retention the observer was told of (empty while nobody observes). */
  private readonly retentionReported = new Set<string>();
  private commands: Redis | null = null;
  private batcher: XaddBatcher | null = null;
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
    return `${this.options.keyPrefix}${this.normalizePattern(pattern as string)}`;
  }

  /**
   * Stream an entry of `packet` goes to: the pattern's stream, or one of its partitions (by the
   * record's partitionKey, round-robin without one).
   */
  streamFor(packet: ReadPacket): string {
    const stream = this.streamOf(packet.pattern);
    const partitions = this.options.partitions[this.normalizePattern(packet.pattern as string)] ?? 1;
    if (partitions <= 1) return stream;
    const key = packet.data instanceof StreamRecord ? packet.data.partitionKey : undefined;
    const partition = key === undefined ? this.nextPartition++ % partitions : partitionOf(key, partitions);
    return partitionStream(stream, partition);
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

  /** Like ClientProxy.emit; a connection failure names the stream. Emits the entry id. */
  override emit<TResult = string, TInput = unknown>(pattern: unknown, data: TInput): Observable<TResult> {
    return super
      .emit<TResult, TInput>(pattern, data)
      .pipe(catchError((err: unknown) => throwError(() => this.explainFor(err, pattern))));
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

  private async request(packet: ReadPacket, stream: string, correlationId: string, deadline: number): Promise<void> {
    const replies = await this.replyReader();
    await this.requireConsumerGroup(stream);
    // The caller may have given up (unsubscribed, timed out) meanwhile: then nothing is written.
    if (!this.requests.has(correlationId)) return;
    await this.write(packet, stream, { replyTo: replies.stream, correlationId, deadline });
  }

  private async write(
    packet: ReadPacket,
    stream: string,
    reply?: { replyTo: string; correlationId: string; deadline: number },
  ): Promise<string> {
    let fields: string[];
    try {
      fields = encodeEnvelope({ ...envelopeOf(packet), ...reply }, this.options.serializer);
    } catch (err) {
      throw new PublishFailedError(CLIENT_MESSAGES.serializeFailed(stream, (err as Error).message), stream, false, {
        cause: err,
      });
    }
    const bytes = fields.reduce((sum, field) => sum + Buffer.byteLength(field), 0);
    if (bytes > this.options.maxPayloadBytes) {
      throw new PayloadTooLargeError(CLIENT_MESSAGES.payloadTooLarge(stream, bytes, this.options.maxPayloadBytes), stream, bytes);
    }
    const retention = this.retentionOf(packet.pattern);
    try {
      await this.connect();
      if (!this.batcher) throw new ClientClosedError(CLIENT_MESSAGES.closing);
      const id = await this.batcher.add(stream, [...xaddTrimArgs(retention), '*', ...fields]);
      this.retention.watch(stream, retention);
      if (this.observer && retention && !this.retentionReported.has(stream)) {
        this.retentionReported.add(stream);
        this.observer.retentionOf(stream, retention);
      }
      return id;
    } catch (err) {
      throw explainWriteError(err, this.writeContext(stream));
    }
  }

  /**
   * Requests to a stream that no group reads would wait for their timeout: the server has no
   * handler to say so (it never reads that stream). Checked once per stream, before writing.
   */
  private async requireConsumerGroup(stream: string): Promise<void> {
    if (this.readStreams.has(stream)) return;
    const groups = await readGroupBacklogs(await this.connect(), stream);
    if (groups.length === 0) throw new NoMessageHandlerError(CLIENT_MESSAGES.noMessageHandler(stream), stream);
    this.readStreams.add(stream);
  }

  private retentionOf(pattern: unknown): StreamRetention | undefined {
    return this.options.retentionByPattern[this.normalizePattern(pattern as string)] ?? this.options.retention;
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
    this.commands = this.batcher = this.connecting = this.replies = null;
    this._status$.next(RedisStreamsStatus.DISCONNECTED);
  }
}
