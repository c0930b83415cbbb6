import { randomBytes } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { CustomTransportStrategy, type MessageHandler, Server, type Transport } from '@nestjs/microservices';
import { SchedulerRegistry } from '@nestjs/schedule';
import type { Redis } from 'ioredis';
import { JsonCodec } from '../codec/json.codec.js';
import type { DecodedEntry } from '../codec/envelope.js';
import type { RedisStreamsContext } from '../context/redis-streams.context.js';
import type { RedisStreamsBatchContext } from '../context/redis-streams-batch.context.js';
import { type RedisStreamsEvents, RedisStreamsStatus } from '../events/redis-streams.events.js';
import { TransportEvents } from '../events/transport-events.js';
import type { RedisStreamsServerOptions } from '../interfaces/server-options.interface.js';
import type { StreamHandlerOptions } from '../interfaces/stream-handler-options.interface.js';
import { MESSAGES } from '../messages.js';
import type { OwnershipCoordinator } from '../ownership/ownership-coordinator.js';
import { aclUserOf, withAclFix } from '../redis/acl-hint.js';
import type { ServerCapabilities } from '../redis/capabilities.js';
import { connectOrExplain, quitWithin, watchStatus } from '../redis/connect.js';
import { createRedisConnection, isClusterConnection } from '../redis/connection.factory.js';
import { type ScriptedRedis, withStreamScripts } from '../redis/scripts.js';
import { tracingEnabled } from '../tracing/trace-context.js';
import type { DirectHandler } from './direct-handlers.js';
import { ownershipReport, startOwnership } from './exclusive-ownership.js';
import { type HandlerPath, decideHandlerPaths, handlerPathLine } from './handler-paths.js';
import { type HandlerRegistration, HandlerRegistry } from './handler-registry.js';
import { probeAtListen } from './listen-probes.js';
import { ATTACH_MICROSERVICE, linkMicroservices } from './microservice-link.js';
import { type RunWithProcessingHooks, betweenProcessingHooks } from './processing-hooks.js';
import { ReplyWriter } from './reply-writer.js';
import { type NestResponses, RequestResponder } from './request-responder.js';
import { type ResolvedServerOptions, resolveServerOptions } from './resolve-options.js';
import { ConsumerEngine, type StreamConsumer } from '../consumer/index.js';
import { ConsumerScheduler } from './consumer-scheduler.js';
import { SERVER_MESSAGES } from './server.messages.js';
import { openWatchedAck } from './watched-ack-connection.js';
import { settleWithin } from './shutdown-deadline.js';
import type { StreamSubscription } from '../consumer/index.js';

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
  /** Every handler's stream(s), group and options, decided once when Nest adds it. */
  private readonly handlers: HandlerRegistry;
  private commands: ScriptedRedis | null = null;
  /** The readers and the watched-ack connection: dropped, never QUIT, at shutdown (see shutdown()). */
  private readonly ownConnections: Redis[] = [];
  private readonly consumers: ConsumerEngine[] = [];
  /** The consumer of each subscription (a request's answer is fenced by its consumer's lease). */
  private readonly consumerOf = new Map<StreamSubscription, ConsumerEngine>();
  private scheduler: ConsumerScheduler | null = null;
  /** Exclusive ownership: one coordinator per logical stream and group (none when shared). */
  private coordinators: OwnershipCoordinator[] = [];
  private closing: Promise<void> | null = null;
  /** What the server's nodes offer (XREADGROUP CLAIM, IDMP...), probed once per listen(). */
  private capabilities: ServerCapabilities | null = null;
  private readonly responder: RequestResponder;
  /** Nest's runWithProcessingHooks, bound once (it is protected, and called per entry when hooks exist). */
  private readonly runHooks: RunWithProcessingHooks = (ctx, fn) => this.runWithProcessingHooks(ctx, fn);
  /** Whether anyone installed Nest's processing hooks (tracing); without them handlers run bare. */
  private hooksInstalled = false;
  /** The microservice that registered this server's handlers (see microservice-link.ts), else useDirectHandlers()'s. */
  private microservice: object | null = null;
  /** Handlers proved bare, called without Nest's per-message pipeline (see handler-paths.ts). */
  private directHandlers = new Map<MessageHandler, DirectHandler>();
  private handlerPaths: HandlerPath[] = [];
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
    // Not a method: Nest's microservice calls it (microservice-link.ts); it is no part of the API.
    Object.defineProperty(this, ATTACH_MICROSERVICE, { value: (microservice: object) => (this.microservice = microservice) });
    linkMicroservices();
    const cluster = isClusterConnection(this.options.connection);
    this.handlers = new HandlerRegistry(this.options, cluster, (pattern) => this.normalizePattern(pattern));
    const replies = new ReplyWriter(() => this.commands!, cluster, new JsonCodec());
    const handleRequest = (this as unknown as { handleRequest?: unknown }).handleRequest;
    // Looked up on every request, not bound once: a tracer or spy that wraps these methods on the
    // instance after construction still sees each request.
    const nest: NestResponses = {
      // Nest 12 runs requests between its processing hooks (tracing); Nest 11 has no handleRequest.
      handleRequest:
        typeof handleRequest === 'function' ? (ctx, produce, respond) => this.handleRequest(ctx, produce, respond) : undefined,
      send: (response$, respond) => this.send(response$, respond),
      transformToObservable: (result) => this.transformToObservable(result),
    };
    this.responder = new RequestResponder(nest, replies, this.logger);
  }

  /**
   * Every stream consumer of this server (one per stream and group), read-only: what health,
   * metrics and the console read. Nothing outside the engine changes a consumer's state.
   */
  getConsumers(): readonly StreamConsumer[] {
    return this.consumers;
  }

  /** Runs one reclaim round on every consumer now; resolves with the number of entries claimed. */
  async reclaimNow(): Promise<number> {
    const rounds = [...(this.scheduler?.reclaimers.values() ?? [])].map((r) => r.run());
    return (await Promise.all(rounds)).reduce((sum, n) => sum + n, 0);
  }

  /** Exclusive ownership per stream and group, as this instance's last round saw it (see ownershipReport). */
  getOwnership() {
    return this.coordinators.map(ownershipReport);
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
    for (const connection of [this.commands, ...this.ownConnections]) connection?.on(event, listener);
  }

  private withListeners<T extends Redis>(connection: T): T {
    for (const [event, listener] of this.connectionListeners) connection.on(event, listener);
    return connection;
  }

  /** Registers a handler with its stream and group (see HandlerRegistry: groups are kept apart). */
  override addHandler(
    pattern: unknown,
    callback: MessageHandler,
    isEventHandler = false,
    extras: Record<string, unknown> = {},
  ): void {
    callback.isEventHandler = isEventHandler;
    callback.extras = extras;
    const { pattern: normalized } = this.handlers.add(pattern, callback, isEventHandler, extras as StreamHandlerOptions);
    if (!this.messageHandlers.has(normalized)) this.messageHandlers.set(normalized, callback);
  }

  async listen(callback: (err?: unknown, ...optionalParams: unknown[]) => void): Promise<void> {
    try {
      if (this.optionsError) throw this.optionsError;
      const registrations = this.handlers.registrations();
      this.decideHandlerPaths(registrations);
      await this.start(registrations);
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

  /** Past shutdownTimeoutMs plus a grace period, every connection is dropped (see settleWithin). */
  private async shutdownWithin(): Promise<void> {
    const limitMs = this.options.shutdownTimeoutMs + SHUTDOWN_GRACE_MS;
    const inTime = await settleWithin(this.shutdown(), limitMs, SHUTDOWN_GRACE_MS, () => {
      this.logger.error(SERVER_MESSAGES.shutdownStuck(limitMs));
      for (const own of this.ownConnections) own.disconnect();
      this.commands?.disconnect();
    });
    if (!inTime) this._status$.next(RedisStreamsStatus.DISCONNECTED);
  }

  private async start(registrations: readonly HandlerRegistration[]): Promise<void> {
    const { connection, consumer } = this.options;
    const subscriptions = registrations.flatMap((registration) => registration.subscriptions);
    this.commands = withStreamScripts(this.withListeners(createRedisConnection(connection, `commands:${consumer}`)));
    watchStatus(this.commands, this._status$);
    await connectOrExplain(this.commands, connection);
    const { features, capabilities } = await probeAtListen(this.commands, subscriptions[0]?.stream, this.logger);
    this.capabilities = capabilities;
    const watchedAck = await openWatchedAck(this.options, this.logger, (redis) => this.withListeners(redis));
    if (watchedAck) this.ownConnections.push(watchedAck.redis);
    const runtime = {
      consumer,
      // Tells this start apart from an earlier one of the same pod in exclusive ownership.
      member: `${consumer}#${randomBytes(4).toString('hex')}`,
      blockMs: this.options.blockMs,
      retryBackoffMs: this.options.retryBackoffMs,
      replyStreamPrefix: this.options.replyStreamPrefix,
      aclUser: aclUserOf(connection),
      streamCounters: features.streamCounters,
      readForgetsTrimGap: features.readForgetsTrimGap,
      // Renewal keeps this consumer's own entries from idling into its CLAIM reads (see claimRead).
      claimRead:
        this.options.claimReads && capabilities.all.claim && this.options.leaseRenewal && this.options.reclaimIntervalMs > 0,
      checkEveryAck: this.options.checkEveryAck,
      watchedAck,
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
      this.ownConnections.push(reader);
      await connectOrExplain(reader, connection);
      const engine = new ConsumerEngine(subscription, { ...runtime, reader });
      await engine.start();
      this.consumers.push(engine);
      this.consumerOf.set(subscription, engine);
    }
    this.scheduler = new ConsumerScheduler(
      this.options.schedulerRegistry ?? new SchedulerRegistry(),
      this.options,
      this.commands,
      this.events,
      this.logger,
    );
    this.scheduler.schedule(this.consumers, capabilities.all.idmp);
    const consumerOf = (subscription: StreamSubscription) => this.consumerOf.get(subscription)!;
    this.coordinators = await startOwnership(registrations, consumerOf, runtime.member, this.commands, this.events, this.logger);
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
    // closed socket would only start ioredis' disconnect timer and hold the process open. The
    // consumers' acks were sent: the watched-ack connection has nothing left to answer.
    for (const own of this.ownConnections) own.disconnect();
    if (this.commands) await quitWithin(this.commands);
    this._status$.next(RedisStreamsStatus.DISCONNECTED);
  }

  /** Which way each handler runs (`direct`, or Nest's `pipeline` and why), as logged at `listen()`; empty before. */
  getHandlerPaths(): readonly HandlerPath[] {
    return this.handlerPaths;
  }

  /** @deprecated Direct handlers are the default (the server finds its microservice itself); `app` is used only if it could not. */
  useDirectHandlers(app: object): this {
    this.microservice ??= app;
    return this;
  }

  private decideHandlerPaths(registrations: readonly HandlerRegistration[]): void {
    const { direct, paths } = decideHandlerPaths({
      enabled: this.options.directHandlers,
      app: this.microservice,
      registrations,
      registrationOf: (pattern, extras) => this.handlers.find(pattern, extras),
      transportId: this.transportId,
    });
    [this.directHandlers, this.handlerPaths] = [direct, paths];
    for (const path of paths) this.logger.log(handlerPathLine(path));
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
    if (sub.kind === 'message' && entry.replyTo && entry.correlationId) {
      const fence = sub.options.exclusive ? this.consumerOf.get(sub)?.fence : undefined;
      return this.responder.answer(sub, entry, ctx, fence);
    }
    const handler = this.directHandlers.get(sub.handler) ?? sub.handler;
    // A direct handler may return a plain value: the dispatcher settles that without a promise.
    if (!this.hooksInstalled) return handler(entry.data, ctx) as Promise<unknown>;
    return betweenProcessingHooks(this.runHooks, ctx, () => handler(entry.data, ctx));
  }

  /**
   * Calls a batch handler with its payloads (`@Payload()`) and batch context (`@Ctx()`), between
   * Nest's processing hooks when someone installed them. Batches are events only (validated).
   */
  private invokeBatch(sub: StreamSubscription, payloads: unknown[], ctx: RedisStreamsBatchContext): Promise<unknown> {
    if (!this.hooksInstalled) return sub.handler(payloads, ctx);
    return betweenProcessingHooks(this.runHooks, ctx, () => sub.handler(payloads, ctx));
  }
}
