// A consumer in its own process, so that tests can SIGKILL it mid-handler. Configured through
// environment variables; reports what it does to the parent over IPC.
import 'reflect-metadata';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { Redis } from 'ioredis';
import { RedisIdempotencyStore, RedisStreamsContext, RedisStreamsServer, runOnce } from 'nest-redis-streams';

const env = process.env;
const stream = env.STREAM!;
const behaviour = env.BEHAVIOUR ?? 'ok';
const report = (message: Record<string, unknown>) => process.send?.(message);
const effects = new Redis(env.REDIS_URL!);
const store = new RedisIdempotencyStore(effects, `${stream}:idem:`);

/** The business effect: count applications per event in a hash the test reads. */
async function applyEffect(ctx: RedisStreamsContext): Promise<void> {
  await effects.hincrby(`${stream}:effects`, ctx.getEventId() ?? ctx.getEntryId(), 1);
}

@Controller()
class WorkerHandlers {
  @EventPattern(stream, { group: env.GROUP ?? 'nest' })
  async handle(@Payload() data: unknown, @Ctx() ctx: RedisStreamsContext) {
    report({ type: 'start', id: ctx.getEntryId(), deliveries: ctx.getDeliveryCount(), data });
    if (behaviour === 'exit') process.exit(3);
    // Fails every run: the entry waits out a retry back-off (RETRY_BACKOFF_MS) in the PEL.
    if (behaviour === 'fail') throw new Error('flaky downstream');
    if (behaviour.startsWith('slow:')) await new Promise((r) => setTimeout(r, Number(behaviour.slice(5))));
    if (env.IDEMPOTENT === '1') await runOnce(store, ctx, () => applyEffect(ctx));
    else await applyEffect(ctx);
    // Dies after the effect and before the transport's ack: the redelivery must skip the effect.
    if (behaviour === 'exit-after-effect') process.exit(4);
    report({ type: 'done', id: ctx.getEntryId(), deliveries: ctx.getDeliveryCount() });
  }
}

@Module({ controllers: [WorkerHandlers] })
class WorkerModule {}

async function main() {
  const server = new RedisStreamsServer({
    connection: env.REDIS_URL,
    consumer: env.CONSUMER,
    blockMs: 200,
    minIdleTimeMs: Number(env.MIN_IDLE ?? 30_000),
    maxDeliveries: Number(env.MAX_DELIVERIES ?? 5),
    reclaimIntervalMs: Number(env.RECLAIM_MS ?? 0),
    leaseRenewal: env.LEASE !== '0',
    retryBackoffMs: Number(env.RETRY_BACKOFF_MS ?? 10),
    concurrency: Number(env.CONCURRENCY ?? 1),
  });
  const app = await NestFactory.createMicroservice(WorkerModule, {
    strategy: server,
    logger: env.LOGS === '1' ? undefined : false,
  });
  await app.listen();
  report({ type: 'ready' });
  process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
}

main().catch((err) => {
  report({ type: 'error', message: String(err) });
  process.exit(1);
});
