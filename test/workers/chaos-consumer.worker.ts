// A consumer process of the chaos suite (test/chaos): SERVERS RedisStreamsServer instances, each
// reading STREAM in every group of GROUPS, that record each handler run and each effect in the
// ledger (a separate redis-server). What a handler does with an entry is said by its payload's
// chaos flags, so one worker serves every scenario. Configured through environment variables.
import 'reflect-metadata';
import { Controller, type INestMicroservice, Module, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { Redis } from 'ioredis';
import {
  RedisIdempotencyStore,
  RedisStreamsContext,
  RedisStreamsExceptionFilter,
  RedisStreamsServer,
  idempotencyKey,
  runOnce,
} from 'nest-redis-streams';
import { chaosFlags, entryKey, ledgerKeys } from './chaos-ledger.js';

const env = process.env;
const num = (name: string, fallback: number) => (env[name] === undefined ? fallback : Number(env[name]));
const stream = env.STREAM!;
const groups = (env.GROUPS ?? 'nest').split(',');
const keys = ledgerKeys(env.RUN!);
const idempotent = env.IDEMPOTENT === '1';
const minIdleTimeMs = num('MIN_IDLE', 1_000);
const processingTtlMs = num('PROCESSING_TTL', minIdleTimeMs);
const handlerMs = num('HANDLER_MS', 0);
const DONE_TTL_MS = 3_600_000;

const ledger = new Redis(env.LEDGER_URL!, { maxRetriesPerRequest: null });
ledger.on('error', () => undefined);
const store = new RedisIdempotencyStore(ledger, keys.idempotency);
const prototypeNames = Object.getOwnPropertyNames(Object.prototype).join();
const stats = new Map<string, number>();
const count = (name: string, by = 1) => stats.set(name, (stats.get(name) ?? 0) + by);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The business effect. With the guard, the "done" marker is written in the same transaction as
 * the effect (what IdempotencyStore's doc asks of a real database), so a SIGKILL between the
 * effect and runOnce's own `complete()` cannot apply it twice.
 */
function applyEffect(group: string, key: string, ctx: RedisStreamsContext) {
  const tx = ledger.multi().hincrby(keys.effects(group), key, 1).hset(keys.appliedBy(group), key, ctx.getConsumer());
  if (idempotent) tx.set(keys.idempotency + idempotencyKey(ctx), 'done', 'PX', DONE_TTL_MS);
  return tx.exec();
}

async function handle(group: string, data: unknown, ctx: RedisStreamsContext): Promise<void> {
  const key = entryKey(ctx.getEventId(), ctx.getEntryId());
  const flags = chaosFlags(data);
  await ledger.hincrby(keys.deliveries(group), key, 1);
  if (Object.getOwnPropertyNames(Object.prototype).join() !== prototypeNames) await ledger.set(keys.polluted, key);
  if (flags.exit) process.exit(3);
  if (flags.poison) throw new Error(`Poison entry ${key} fails on every delivery.`);
  // The work takes its time inside the guard, as a real effect (a payment call) would.
  const work = async () => {
    if (flags.crashInEffect && ctx.getDeliveryCount() === 1) process.kill(process.pid, 'SIGKILL');
    const delay = flags.slowMs ?? handlerMs;
    if (delay > 0) await sleep(delay);
    return applyEffect(group, key, ctx);
  };
  if (idempotent) await runOnce(store, ctx, work, { processingTtlMs, doneTtlMs: DONE_TTL_MS });
  else await work();
  // Dies after the effect and before the transport's ack: the redelivery must not apply it again.
  if (flags.crashAfterEffect && ctx.getDeliveryCount() === 1) process.kill(process.pid, 'SIGKILL');
}

/** One controller per group: a class per group keeps Nest's handler chaining out of the way. */
function groupController(group: string): Type {
  @Controller()
  class GroupHandlers {
    @EventPattern(stream, { group })
    handle(@Payload() data: unknown, @Ctx() ctx: RedisStreamsContext) {
      return handle(group, data, ctx);
    }
  }
  Object.defineProperty(GroupHandlers, 'name', { value: `GroupHandlers_${group.replace(/\W/g, '_')}` });
  return GroupHandlers;
}

@Module({ controllers: groups.map(groupController) })
class ChaosConsumerModule {}

function watch(server: RedisStreamsServer): void {
  server.events.on('reclaimed', (e) => count('reclaimed', e.count));
  server.events.on('lease-renewed', () => count('lease-renewals'));
  server.events.on('lease-lost', () => count('lease-lost'));
  server.events.on('failed', () => count('failed'));
  server.events.on('dead-lettered', (e) => count(`dead-lettered:${e.reason}`));
}

async function flushStats(): Promise<void> {
  const rss = process.memoryUsage().rss;
  const label = env.CONSUMER!;
  const pipeline = ledger.pipeline();
  for (const [name, value] of stats) pipeline.hincrby(keys.stats, name, value);
  stats.clear();
  // Largest RSS seen, per process label (a restarted process keeps the larger one).
  pipeline.eval(
    "if tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0') < tonumber(ARGV[2]) then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end",
    1,
    keys.rss,
    label,
    rss,
  );
  await pipeline.exec();
}

async function main(): Promise<void> {
  const servers = num('SERVERS', 1);
  const apps: INestMicroservice[] = [];
  for (let i = 0; i < servers; i++) {
    const server = new RedisStreamsServer({
      connection: env.DATA_URL,
      consumer: servers > 1 ? `${env.CONSUMER}-${i}` : env.CONSUMER,
      blockMs: num('BLOCK_MS', 500),
      minIdleTimeMs,
      maxDeliveries: num('MAX_DELIVERIES', 10),
      reclaimIntervalMs: num('RECLAIM_MS', 200),
      leaseRenewal: env.LEASE !== '0',
      retryBackoffMs: num('RETRY_MS', 50),
      concurrency: num('CONCURRENCY', 4),
      // Unset: the transport's default (no read-ahead beyond concurrency).
      prefetchCount: env.PREFETCH === undefined ? undefined : Number(env.PREFETCH),
      shutdownTimeoutMs: num('SHUTDOWN_MS', 5_000),
    });
    watch(server);
    const app = await NestFactory.createMicroservice(ChaosConsumerModule, {
      strategy: server,
      logger: env.LOGS === '1' ? undefined : false,
    });
    app.useGlobalFilters(new RedisStreamsExceptionFilter());
    await app.listen();
    apps.push(app);
  }
  const statsTimer = setInterval(() => void flushStats().catch(() => undefined), 200);
  process.send?.({ type: 'ready' });
  process.once('SIGTERM', () => {
    const started = Date.now();
    void Promise.all(apps.map((app) => app.close()))
      .then(async () => {
        clearInterval(statsTimer);
        await flushStats().catch(() => undefined);
        process.send?.({ type: 'closed', closeMs: Date.now() - started }, () => process.exit(0));
      })
      .catch(() => process.exit(1));
  });
}

main().catch((err: Error) => {
  process.send?.({ type: 'error', message: err.stack ?? String(err) }, () => process.exit(1));
});
