// Row 8's consumer: a Nest microservice whose handler writes a charge to PostgreSQL in one
// transaction, either as is (INBOX=0) or through Inbox.run (INBOX=1), which adds the nrs_inbox row
// to the same transaction. Everything else (transport settings, pool, statement, timing) is shared,
// so the difference between the two rows is the inbox.
import 'reflect-metadata';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { Pool } from 'pg';
import { RedisStreamsContext, RedisStreamsServer } from 'nest-redis-streams';
import { Inbox, pgDatabase, type SqlExecutor } from 'nest-redis-streams/database';
import { Probe, envNumber } from './probe.js';

const env = process.env;
const probe = new Probe(envNumber('EXPECT'));
const pool = new Pool({ connectionString: env.DATABASE_URL, max: envNumber('POOL_SIZE') });
// An idle connection that breaks must not end the run; the next statement fails and is retried.
pool.on('error', () => undefined);
const db = pgDatabase(pool);
const inbox = new Inbox(db);
const useInbox = env.INBOX === '1';

interface OrderPlaced {
  orderId: string;
  priceCents: number;
}

/** The handler's effect: the business row every variant writes. */
function charge(sql: SqlExecutor, order: OrderPlaced, ctx: RedisStreamsContext): Promise<unknown> {
  return sql.query('INSERT INTO bench_charges (order_id, amount_cents, event_id) VALUES ($1, $2, $3)', [
    order.orderId,
    order.priceCents,
    ctx.getEventId() ?? ctx.getEntryId(),
  ]);
}

@Controller()
class BenchHandlers {
  @EventPattern(env.STREAM!)
  async handle(@Payload() order: OrderPlaced, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    probe.handle(order);
    if (useInbox) await inbox.run(ctx, 'bench.charge', (tx) => charge(db.executor(tx), order, ctx));
    else await db.transaction((tx) => charge(db.executor(tx), order, ctx));
  }
}

@Module({ controllers: [BenchHandlers] })
class BenchModule {}

async function main(): Promise<void> {
  const server = new RedisStreamsServer({
    connection: env.REDIS_URL!,
    consumer: 'bench',
    group: env.GROUP!,
    concurrency: envNumber('CONCURRENCY'),
    prefetchCount: envNumber('PREFETCH'),
  });
  server.events.on('acked', ({ count }) => probe.acknowledged(count));
  const app = await NestFactory.createMicroservice(BenchModule, { strategy: server, logger: false });
  await app.listen();
  probe.ready();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
