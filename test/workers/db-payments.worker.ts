// The payments consumer of the database chaos scenarios: a RedisStreamsServer process that charges
// each order with the transactional inbox (the charge and its inbox row commit together), on a
// real PostgreSQL (DATABASE_URL). Outcomes go to the chaos ledger. Configured through env.
import 'reflect-metadata';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { Redis } from 'ioredis';
import { Pool } from 'pg';
import { RedisStreamsContext, RedisStreamsExceptionFilter, RedisStreamsServer } from 'nest-redis-streams';
import { Inbox, pgDatabase } from 'nest-redis-streams/database';
import { CHARGE_HANDLER, type OrderEvent, dbLedger } from './db-chaos-schema.js';

const env = process.env;
const num = (name: string, fallback: number) => (env[name] === undefined ? fallback : Number(env[name]));
const keys = dbLedger(env.RUN!);
const concurrency = num('CONCURRENCY', 8);
const handlerMs = num('HANDLER_MS', 0);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const ledger = new Redis(env.LEDGER_URL!, { maxRetriesPerRequest: null });
ledger.on('error', () => undefined);
// Idle clients break when PostgreSQL restarts; the pool drops them and connects new ones.
const pool = new Pool({ connectionString: env.DATABASE_URL, max: concurrency + 1, connectionTimeoutMillis: 2_000 });
pool.on('error', () => undefined);
const db = pgDatabase(pool);
const inbox = new Inbox(db);

@Controller()
class Payments {
  @EventPattern(env.STREAM!, { group: 'payments' })
  async charge(@Payload() order: OrderEvent, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    const outcome = await inbox.run(ctx, CHARGE_HANDLER, async (tx) => {
      // The payment provider's call, inside the transaction as the charge row is.
      if (handlerMs > 0) await sleep(handlerMs);
      await db
        .executor(tx)
        .query('INSERT INTO charges (order_id, event_id, amount) VALUES ($1, $2, $3)', [
          order.id,
          ctx.getEventId(),
          order.amount,
        ]);
    });
    await ledger.hincrby(keys.outcomes, outcome.status, 1);
    // Committed, not acked yet: the redelivery after the restart must find the inbox row.
    if (order.crashAfterCommit && ctx.getDeliveryCount() === 1) {
      await ledger.hincrby(keys.outcomes, 'crashed-after-commit', 1);
      process.kill(process.pid, 'SIGKILL');
    }
  }
}

@Module({ controllers: [Payments] })
class PaymentsModule {}

async function main(): Promise<void> {
  const server = new RedisStreamsServer({
    connection: env.DATA_URL,
    consumer: env.CONSUMER,
    blockMs: 500,
    // No read-ahead: scenario 13 crashes on an order's first delivery, and an entry read ahead
    // of a crash is on its second delivery when it first runs (README, "Read-ahead").
    prefetchCount: concurrency,
    minIdleTimeMs: num('MIN_IDLE', 1_000),
    reclaimIntervalMs: 200,
    retryBackoffMs: num('RETRY_MS', 50),
    maxDeliveries: num('MAX_DELIVERIES', 50),
    concurrency,
  });
  server.events.on('failed', () => void ledger.hincrby(keys.outcomes, 'failed', 1));
  const app = await NestFactory.createMicroservice(PaymentsModule, {
    strategy: server,
    logger: env.LOGS === '1' ? undefined : false,
  });
  app.useGlobalFilters(new RedisStreamsExceptionFilter());
  await app.listen();
  process.send?.({ type: 'ready' });
}

main().catch((err: Error) => {
  process.send?.({ type: 'error', message: err.stack ?? String(err) }, () => process.exit(1));
});
