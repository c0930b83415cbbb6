import { randomBytes } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { type BaseRpcContext, CustomTransportStrategy, type MessageHandler, Server, type Transport } from '@nestjs/microservices';
import { SchedulerRegistry } from '@nestjs/schedule';
import type { Redis } from 'ioredis';
import { isObservable, lastValueFrom, throwError } from 'rxjs';
import { finalize } from 'rxjs/operators';
import { JsonCodec } from '../codec/json.codec.js';
import type { DecodedEntry } from '../codec/envelope.js';
import type { RedisStreamsContext } from '../context/redis-streams.context.js';
import type { RedisStreamsBatchContext } from '../context/redis-streams-batch.context.js';
import { InvalidOptionsError } from '../errors/invalid-options.error.js';
import { type RedisStreamsEvents, RedisStreamsStatus } from '../events/redis-streams.events.js';
import { TransportEvents } from '../events/transport-events.js';
import type { RedisStreamsServerOptions } from '../interfaces/server-options.interface.js';
import type { StreamHandlerOptions } from '../interfaces/stream-handler-options.interface.js';
import { MESSAGES } from '../messages.js';
import { connectOrExplain, quitWithin, watchStatus } from '../redis/connect.js';
import { createRedisConnection, isClusterConnection } from '../redis/connection.factory.js';
import { probeRedisFeatures } from '../redis/redis-features.js';
import { trimAuditKey } from '../recovery/trim-audit.js';
import { type ServerCapabilities, probeKeyNear, reportCapabilities } from '../redis/capabilities.js';
import { aclUserOf, withAclFix } from '../redis/acl-hint.js';
import { tracingEnabled } from '../tracing/trace-context.js';
import { type ScriptedRedis, withStreamScripts } from '../redis/scripts.js';
import { ConsumerScheduler } from './consumer-scheduler.js';
import { type DirectHandler, findDirectHandlers } from './direct-handlers.js';
import { startOwnership } from './exclusive-ownership.js';
import type { OwnershipCoordinator } from '../ownership/ownership-coordinator.js';
import { type ResolvedServerOptions, resolveHandlerOptions, resolveServerOptions } from './resolve-options.js';
import { partitionStreams } from './partitions.js';
import { type AnswerPacket, ReplyWriter } from './reply-writer.js';
import { ConsumerEngine, type StreamConsumer, waitForSignal } from '../consumer/index.js';
import { streamNameOf } from './stream-pattern.js';
import type { StreamSubscription } from './stream-subscription.js';
import { SERVER_MESSAGES } from './server.messages.js';

/** Past shutdownTimeoutMs, how long a shutdown may still take before its connections are dropped. */
const SHUTDOWN_GRACE_MS = 5_000;

/**
 * Nest transport strategy for Redis Streams consumer groups. Every `@EventPattern(stream)` or
 * `@MessagePattern(stream)` handler reads its stream in a consumer group (one read loop and one
 * blocking connection each); entries are acked only after the handler succeeded.
 *
 * @example
 * ```ts
 * const app = await NestFactory.createMicroservice(AppModule, {
 *   strategy: new RedisStreamsServer({ connection: process.env.REDIS_URL, consumer: process.env.CONSUMER_NAME }),
 * });
 * app.enableShutdownHooks(); // drain on SIGTERM
 * await app.listen();
 * ```
 * @publicApi
 */
export class RedisStreamsServer extends Server<RedisStreamsEvents, RedisStreamsStatus> implements CustomTransportStrategy {
  // The transport acks, retries and dead-letters failures itself, so handler errors must reach it.
  override readonly propagatesEventHandlerErrors = true;
  protected override readonly logger = new Logger(RedisStreamsServer.name);
  /** Lifecycle events (delivered, failed, dead-lettered, reclaimed, lease-lost...). */
  readonly events = new TransportEvents();
  readonly options: ResolvedServerOptions;
  private readonly optionsError: Error | null = null;
  private readonly handlerSpecs = new Map<
    string,
    { pattern: string; handler: MessageHandler; extras: StreamHandlerOptions; isEvent: boolean }
  >();
  private commands: ScriptedRedis | null = null;
  private readonly readers: Redis[] = [];
  private readonly consumers: StreamConsumer[] = [];
  private scheduler: ConsumerScheduler | null = null;
  /** Exclusive ownership: one coordinator per logical stream and group (none when shared). */
  private coordinators: OwnershipCoordinator[] = [];
  private closing: Promise<void> | null = null;
  /** What the server's nodes offer (XREADGROUP CLAIM, IDMP...), probed once per listen(). */
  private capabilities: ServerCapabilities | null = null;
  private readonly replies: ReplyWriter;
  /** Whether anyone installed Nest's processing hooks (tracing); without them handlers run bare. */
  private hooksInstalled = false;
  /** The application handed to useDirectHandlers(), read once in listen(). */
  private directApp: unknown = null;
  /** Handlers proved bare, called without Nest's per-message pipeline (see useDirectHandlers). */
  private directHandlers = new Map<MessageHandler, DirectHandler>();
  /** Listeners registered with on(), attached to every connection, also to those made later. */
  private readonly connectionListeners: Array<[event: string, callback: (...args: unknown[]) => void]> = [];

  constructor(options: RedisStreamsServerOptions = {}) {
    super();
    try {
      this.options = resolveServerOptions(options);
    } catch (err) {
      // Reported by listen(), where Nest expects start-up failures.
      this.optionsError = err as Error;
      this.options = { ...(options as ResolvedServerOptions) };
    }
    this.initializeDeserializer(options);
    this.replies = new ReplyWriter(() => this.commands!, isClusterConnection(this.options.connection), new JsonCodec());
  }

  /** Every stream consumer of this server (one per stream and group). */
  getConsumers(): readonly StreamConsumer[] {
    return this.consumers;
  }

  /** Runs one reclaim round on every consumer now; resolves with the number of entries claimed. */
  async reclaimNow(): Promise<number> {
    const rounds = [...(this.scheduler?.reclaimers.values() ?? [])].map((r) => r.run());
    return (await Promise.all(rounds)).reduce((sum, n) => sum + n, 0);
  }

  /**
   * Exclusive ownership: who owns which partition (as this instance's last round saw it), the
   * generations, the live members and how often this instance's set of partitions changed.
   */
  getOwnership() {
    return this.coordinators.map((c) => ({
      stream: c.scope.stream,
      group: c.scope.group,
      member: c.scope.member,
      members: c.view.members,
      owned: c.ownedPartitions(),
      rebalances: c.rebalances,
      partitions: c.view.partitions,
    }));
  }

  /** The stream capabilities probed at listen() (per node, and those every node has); null before. */
  getCapabilities(): ServerCapabilities | null {
    return this.capabilities;
  }

  /** The connection used for non-blocking commands (acks, claims, XADD). */
  unwrap<T = Redis>(): T {
    if (!this.commands) throw new Error(MESSAGES.notListening);
    return this.commands as unknown as T;
  }

  /**
   * Listens to the Redis connections' events (`error`, `reconnecting`...). Like Nest's own
   * servers, listeners registered before `listen()` are kept and attached once connections exist.
   */
  on<K extends keyof RedisStreamsEvents>(event: K, callback: RedisStreamsEvents[K]): void {
    const listener = callback as (...args: unknown[]) => void;
    this.connectionListeners.push([event, listener]);
    for (const connection of [this.commands, ...this.readers]) connection?.on(event, listener);
  }

  private withListeners<T extends Redis>(connection: T): T {
    for (const [event, listener] of this.connectionListeners) connection.on(event, listener);
    return connection;
  }

  /**
   * Keeps event handlers of different groups apart. Nest's base class chains every handler of a
   * pattern into one call, which would run the billing handler for the inventory group's entry.
   */
  override addHandler(
    pattern: unknown,
    callback: MessageHandler,
    isEventHandler = false,
    extras: Record<string, unknown> = {},
  ): void {
    const normalized = this.normalizePattern(streamNameOf(pattern) as string);
    const group = (extras as StreamHandlerOptions).group ?? this.options.group;
    const key = `${normalized}\u0000${group}`;
    callback.isEventHandler = isEventHandler;
    callback.extras = extras;
    const existing = this.handlerSpecs.get(key);
    if (existing && existing.isEvent && isEventHandler) {
      // Same stream and group: one consumer runs them all for each entry (Nest's own chaining).
      let tail = existing.handler;
      while (tail.next) tail = tail.next;
      tail.next = callback;
      return;
    }
    if (existing)
      throw new InvalidOptionsError(
        existing.isEvent !== isEventHandler
          ? MESSAGES.mixedHandlerKinds(normalized, group)
          : MESSAGES.duplicateMessageHandler(normalized, group),
      );
    this.handlerSpecs.set(key, {
      pattern: normalized,
      handler: callback,
      extras: extras as StreamHandlerOptions,
      isEvent: isEventHandler,
    });
    if (!this.messageHandlers.has(normalized)) this.messageHandlers.set(normalized, callback);
  }

  async listen(callback: (err?: unknown, ...optionalParams: unknown[]) => void): Promise<void> {
    try {
      if (this.optionsError) throw this.optionsError;
      const subscriptions = this.buildSubscriptions();
      if (this.directApp) this.directHandlers = this.findDirectHandlers(this.directApp);
      await this.start(subscriptions);
      callback();
    } catch (err) {
      await this.close();
      callback(withAclFix(err, aclUserOf(this.options.connection)));
    }
  }

  /** Stops reading, waits for running handlers (up to shutdownTimeoutMs), acks, disconnects. */
  close(): Promise<void> {
    this.closing ??= this.shutdownWithin();
    return this.closing;
  }

  /**
   * A shutdown must end even when Redis never answers (a node that died in a failover, with
   * `maxRetriesPerRequest: null` a command waits for it for ever): past shutdownTimeoutMs plus a
   * grace period every connection is dropped, which fails whatever still waits on Redis. Nothing
   * is lost by giving up: entries not acked stay pending and are delivered again.
   */
  private async shutdownWithin(): Promise<void> {
    const graceful = this.shutdown();
    const limitMs = this.options.shutdownTimeoutMs + SHUTDOWN_GRACE_MS;
    let finished = false;
    const settled = graceful.then(
      () => (finished = true),
      () => (finished = true),
    );
    await waitForSignal((resolve) => void settled.then(resolve), limitMs);
    if (finished) return graceful;
    this.logger.error(SERVER_MESSAGES.shutdownStuck(limitMs));
    for (const reader of this.readers) reader.disconnect();
    this.commands?.disconnect();
    await waitForSignal((resolve) => void settled.then(resolve), SHUTDOWN_GRACE_MS);
    this._status$.next(RedisStreamsStatus.DISCONNECTED);
  }

  private buildSubscriptions(): StreamSubscription[] {
    return [...this.handlerSpecs.values()].flatMap(({ pattern, handler, extras, isEvent }) => {
      const base = `${this.options.keyPrefix}${pattern}`;
      const cluster = isClusterConnection(this.options.connection);
      resolveHandlerOptions(this.options, extras ?? {}, base, cluster);
      // One subscription (read loop) per partition stream, all with the same handler and group.
      return partitionStreams(base, extras?.partitions ?? 1).map((stream, partition) => ({
        pattern,
        stream,
        partition,
        kind: isEvent ? ('event' as const) : ('message' as const),
        handler,
        options: resolveHandlerOptions(this.options, extras ?? {}, stream, cluster),
      }));
    });
  }

  private async start(subscriptions: StreamSubscription[]): Promise<void> {
    const { connection } = this.options;
    this.commands = withStreamScripts(this.withListeners(createRedisConnection(connection, `commands:${this.options.consumer}`)));
    watchStatus(this.commands, this._status$);
    await connectOrExplain(this.commands, connection);
    // Once per listen(): a Redis without XAUTOCLAIM fails here, naming its version and the minimum.
    // The trim-gap probe writes a scratch stream beside the first stream's trim-audit hash: in
    // its slot, and inside the key patterns a consumer's ACL grants.
    const probeKey = subscriptions[0] ? `${trimAuditKey(subscriptions[0].stream)}:probe` : undefined;
    const features = await probeRedisFeatures(this.commands, probeKey);
    // One log line of what each node offers, and a warning for a node below its patch floor.
    // The capability probes use a key next to a consumed stream, inside a restricted user's patterns.
    const capabilityKey = subscriptions.length > 0 ? probeKeyNear(subscriptions[0].stream) : undefined;
    this.capabilities = await reportCapabilities(this.commands, this.logger, capabilityKey);
    const runtime = {
      consumer: this.options.consumer,
      // Tells this start apart from an earlier one of the same pod in exclusive ownership.
      member: `${this.options.consumer}#${randomBytes(4).toString('hex')}`,
      blockMs: this.options.blockMs,
      retryBackoffMs: this.options.retryBackoffMs,
      replyStreamPrefix: this.options.replyStreamPrefix,
      aclUser: aclUserOf(connection),
      streamCounters: features.streamCounters,
      readForgetsTrimGap: features.readForgetsTrimGap,
      // Renewal keeps this consumer's own entries from idling into its CLAIM reads (see claimRead).
      claimRead: this.capabilities.all.claim && this.options.leaseRenewal && this.options.reclaimIntervalMs > 0,
      deserializer: this.options.deserializer ?? new JsonCodec(),
      commands: this.commands,
      events: this.events,
      logger: this.logger,
      tracing: tracingEnabled(),
      invoke: (sub: StreamSubscription, entry: DecodedEntry, ctx: RedisStreamsContext) => this.invoke(sub, entry, ctx),
      invokeBatch: (sub: StreamSubscription, payloads: unknown[], ctx: RedisStreamsBatchContext) =>
        this.invokeBatch(sub, payloads, ctx),
    };
    for (const subscription of subscriptions) {
      // A blocking read holds its connection, so every read loop gets its own. It never gets a
      // commandTimeout: ioredis would give up on an XREADGROUP ... BLOCK that Redis still
      // completes, and the entries it delivered would sit in the PEL with nobody handling them.
      const reader = this.withListeners(
        createRedisConnection(connection, `reader:${subscription.stream}:${subscription.options.group}`, {
          maxRetriesPerRequest: null,
          commandTimeout: undefined,
        }),
      );
      this.readers.push(reader);
      await connectOrExplain(reader, connection);
      const consumer = new ConsumerEngine(subscription, { ...runtime, reader });
      await consumer.start();
      this.consumers.push(consumer);
    }
    this.scheduler = new ConsumerScheduler(
      this.options.schedulerRegistry ?? new SchedulerRegistry(),
      this.options,
      this.commands,
      this.events,
      this.logger,
    );
    this.scheduler.schedule(this.consumers);
    this.coordinators = await startOwnership(
      this.consumers,
      this.options.keyPrefix,
      runtime.member,
      this.commands,
      this.events,
      this.logger,
    );
    this._status$.next(RedisStreamsStatus.CONNECTED);
    const streams = subscriptions.map((s) => ({ stream: s.stream, group: s.options.group }));
    this.logger.log(SERVER_MESSAGES.consuming(streams, this.options.consumer));
  }

  /**
   * The order matters: first nothing new starts (reads, reclaim rounds; an entry claimed by a
   * round in flight is handed back, not run), then running handlers finish while their leases
   * are still renewed, and only then do the leases stop. Stopping leases first let another
   * instance take over entries that were still running here.
   */
  private async shutdown(): Promise<void> {
    for (const coordinator of this.coordinators) coordinator.stopClaiming();
    for (const consumer of this.consumers) consumer.stopReading();
    await this.scheduler?.stopReclaiming();
    await Promise.all(this.consumers.map((c) => c.stop(this.options.shutdownTimeoutMs)));
    await this.scheduler?.unschedule();
    // Released partitions are taken over at once, without waiting for the lease to run out.
    await Promise.all(this.coordinators.map((c) => c.stop()));
    // Readers were disconnected by their consumers (to interrupt blocking reads); a QUIT on a
    // closed socket would only start ioredis' disconnect timer and hold the process open.
    for (const reader of this.readers) reader.disconnect();
    if (this.commands) await quitWithin(this.commands);
    this._status$.next(RedisStreamsStatus.DISCONNECTED);
  }

  /**
   * Opt-in fast path: event handlers with nothing bound to them skip Nest's per-message pipeline
   * and are called as their controller method (same arguments, same results, failures through
   * the exception filter Nest would apply). At `listen()` every handler is checked; one with
   * a guard, interceptor, pipe, exception filter or custom parameter decorator on its method or
   * controller, any app-wide enhancer, a request-scoped controller, or anything this cannot read,
   * keeps Nest's pipeline. The log says which way each handler runs. Call before `app.listen()`.
   *
   * @example
   * ```ts
   * const app = await NestFactory.createMicroservice(AppModule, { strategy: server });
   * server.useDirectHandlers(app);
   * await app.listen();
   * ```
   */
  useDirectHandlers(app: object): this {
    this.directApp = app;
    return this;
  }

  private findDirectHandlers(app: unknown): Map<MessageHandler, DirectHandler> {
    // Batch handlers are called by invokeBatch, always through Nest's pipeline.
    const specs = [...this.handlerSpecs.entries()]
      .filter(([, spec]) => !(spec.extras as { batch?: unknown }).batch)
      .map(([key, spec]) => ({ ...spec, group: key.split('\u0000')[1] }));
    return findDirectHandlers(
      app,
      specs,
      (pattern) => this.normalizePattern(streamNameOf(pattern) as string),
      (extras) => (extras as StreamHandlerOptions | undefined)?.group ?? this.options.group,
      this.transportId,
      (message) => this.logger.log(message),
    );
  }

  override setOnProcessingStartHook(
    hook: (transportId: Transport | symbol, context: unknown, done: () => Promise<unknown>) => void,
  ): void {
    this.hooksInstalled = true;
    super.setOnProcessingStartHook(hook);
  }

  override setOnProcessingEndHook(hook: (transportId: Transport | symbol, context: unknown) => void): void {
    this.hooksInstalled = true;
    super.setOnProcessingEndHook(hook);
  }

  /**
   * Calls a handler (between Nest's processing hooks when someone installed them). Resolves with
   * what the handler returned, rejects with what it threw; the consumer waits for an Observable.
   * Not async: this runs for every entry, and the bare case returns Nest's own promise.
   */
  private invoke(sub: StreamSubscription, entry: DecodedEntry, ctx: RedisStreamsContext): Promise<unknown> {
    if (sub.kind === 'message' && entry.replyTo && entry.correlationId) return this.answer(sub, entry, ctx);
    const handler = this.directHandlers.get(sub.handler) ?? sub.handler;
    // A direct handler may return a plain value: the dispatcher settles that without a promise.
    if (!this.hooksInstalled) return handler(entry.data, ctx) as Promise<unknown>;
    return this.betweenProcessingHooks(ctx, () => handler(entry.data, ctx));
  }

  /**
   * Calls a batch handler with its payloads (`@Payload()`) and batch context (`@Ctx()`), between
   * Nest's processing hooks when someone installed them. Batches are events only (validated).
   */
  private invokeBatch(sub: StreamSubscription, payloads: unknown[], ctx: RedisStreamsBatchContext): Promise<unknown> {
    if (!this.hooksInstalled) return sub.handler(payloads, ctx);
    return this.betweenProcessingHooks(ctx, () => sub.handler(payloads, ctx));
  }

  /**
   * Runs a handler call between Nest's processing hooks (someone installed them): resolves once
   * the handler, and the Observable it may return, completed; the end hook runs exactly once.
   */
  private betweenProcessingHooks(ctx: BaseRpcContext, call: () => unknown): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const started = this.runWithProcessingHooks(ctx, async (runEndHook) => {
        try {
          const result = await call();
          if (isObservable(result)) await lastValueFrom(result.pipe(finalize(runEndHook)), { defaultValue: undefined });
          else runEndHook();
          resolve();
        } catch (err) {
          reject(err);
          throw err;
        }
      }) as unknown;
      // The hook chain rethrows what we already reported through reject().
      if (started instanceof Promise) started.catch(() => undefined);
    });
  }

  /** Request/response: replies go to the caller's own reply stream; the request is then acked. */
  private answer(sub: StreamSubscription, entry: DecodedEntry, ctx: RedisStreamsContext): Promise<void> {
    const replyTo = entry.replyTo!;
    const correlationId = entry.correlationId!;
    return new Promise<void>((resolve) => {
      const fence = sub.options.exclusive ? this.consumers.find((c) => c.subscription === sub)?.fence : undefined;
      const produce = async () => {
        try {
          return this.transformToObservable(await sub.handler(entry.data, ctx));
        } catch (err) {
          return throwError(() => err);
        }
      };
      // The request is settled (and acked) after its last packet, written or not.
      const reply = (packet: AnswerPacket) =>
        this.replies
          .write(replyTo, correlationId, packet, fence)
          .catch((err: Error) => this.logger.error(SERVER_MESSAGES.replyWriteFailed(replyTo, err.message)))
          .then(() => {
            if (packet.isDisposed) resolve();
          });
      // Nest 12 runs requests between its processing hooks (tracing); Nest 11 has no
      // handleRequest, and its send() alone streams the replies.
      if (typeof (this as unknown as { handleRequest?: unknown }).handleRequest === 'function') {
        this.handleRequest(ctx, produce, reply);
      } else {
        void produce().then((response$) => this.send(response$, reply));
      }
    });
  }
}
