// A batch-handler consumer process of the chaos suite (test/chaos/batch-crash.spec.ts): reads
// STREAM with `batch: { maxSize: BATCH_SIZE, maxWaitMs: BATCH_WAIT_MS }` and applies each batch's
// effects to the ledger in one transaction, with a per-entry "done" marker in the same
// transaction (as a database's processed-events rows would be). It tells its parent when a batch
// starts, so the suite can SIGKILL it in the middle of one.
import 'reflect-metadata';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { Redis } from 'ioredis';
import { RedisStreamsBatchContext, RedisStreamsExceptionFilter, RedisStreamsServer, idempotencyKey } from 'nest-redis-streams';
import { entryKey, ledgerKeys } from './chaos-ledger.js';

const env = process.env;
const num = (name: string, fallback: number) => (env[name] === undefined ? fallback : Number(env[name]));
const stream = env.STREAM!;
const keys = ledgerKeys(env.RUN!);
const handlerMs = num('HANDLER_MS', 20);
const DONE_TTL_MS = 3_600_000;
const GROUP = 'nest';

const ledger = new Redis(env.LEDGER_URL!, { maxRetriesPerRequest: null });
ledger.on('error', () => undefined);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

@Controller()
class BatchLedger {
  @EventPattern(stream, { group: GROUP, batch: { maxSize: num('BATCH_SIZE', 50), maxWaitMs: num('BATCH_WAIT_MS', 20) } })
  async record(@Payload() _payloads: unknown[], @Ctx() batch: RedisStreamsBatchContext): Promise<void> {
    const entries = batch.getEntries();
    const ledgerKeysOf = entries.map((ctx) => entryKey(ctx.getEventId(), ctx.getEntryId()));
    const started = ledger.pipeline();
    for (const key of ledgerKeysOf) started.hincrby(keys.deliveries(GROUP), key, 1);
    await started.exec();
    process.send?.({ type: 'batch', size: entries.length });
    await sleep(handlerMs); // the "transaction" of the batch
    // Idempotent per entry: entries whose marker says done (a batch killed after its commit and
    // before its ack) are skipped; the others are applied with their markers in one MULTI.
    const markers = entries.map((ctx) => keys.idempotency + idempotencyKey(ctx));
    const done = await ledger.mget(...markers);
    const tx = ledger.multi();
    entries.forEach((ctx, i) => {
      if (done[i] === 'done') return;
      tx.hincrby(keys.effects(GROUP), ledgerKeysOf[i], 1).hset(keys.appliedBy(GROUP), ledgerKeysOf[i], ctx.getConsumer());
      tx.set(markers[i], 'done', 'PX', DONE_TTL_MS);
    });
    await tx.exec();
  }
}

@Module({ controllers: [BatchLedger] })
class BatchConsumerModule {}

async function main(): Promise<void> {
  const server = new RedisStreamsServer({
    connection: env.DATA_URL,
    consumer: env.CONSUMER,
    blockMs: 500,
    minIdleTimeMs: num('MIN_IDLE', 1_000),
    reclaimIntervalMs: num('RECLAIM_MS', 200),
    retryBackoffMs: 50,
    maxDeliveries: num('MAX_DELIVERIES', 20),
  });
  const app = await NestFactory.createMicroservice(BatchConsumerModule, {
    strategy: server,
    logger: env.LOGS === '1' ? undefined : false,
  });
  app.useGlobalFilters(new RedisStreamsExceptionFilter());
  await app.listen();
  process.send?.({ type: 'ready' });
  process.once('SIGTERM', () => {
    void app.close().then(
      () => process.send?.({ type: 'closed' }, () => process.exit(0)),
      () => process.exit(1),
    );
  });
}

main().catch((err: Error) => {
  process.send?.({ type: 'error', message: err.stack ?? String(err) }, () => process.exit(1));
});
