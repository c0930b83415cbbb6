// Row 2's consumer with the opt-in fast path: the same Nest microservice, no-op handler and
// settings as transport-consumer, plus `server.useDirectHandlers(app)`, so the handler (nothing
// bound to it) is called without Nest's per-message pipeline. Timed by the same Probe, and
// configured by the same variables (LATENCY, WARMUP, BLOCK_MS too), so any row can swap it in.
import 'reflect-metadata';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EventPattern, Payload } from '@nestjs/microservices';
import { RedisStreamsServer } from 'nest-redis-streams';
import { Probe, envNumber } from './probe.js';

const env = process.env;
const probe = new Probe(envNumber('EXPECT'), envNumber('WARMUP', 0), env.LATENCY === '1');

@Controller()
class BenchHandlers {
  @EventPattern(env.STREAM!)
  handle(@Payload() data: unknown): void {
    probe.handle(data);
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
    blockMs: env.BLOCK_MS === undefined ? undefined : envNumber('BLOCK_MS'),
  });
  server.events.on('acked', ({ count }) => probe.acknowledged(count));
  const app = await NestFactory.createMicroservice(BenchModule, { strategy: server, logger: false });
  server.useDirectHandlers(app);
  await app.listen();
  probe.ready();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
