// A batch handler (issue 15, item 2): the same Nest microservice as transport-consumer, with
// `batch: { maxSize: BATCH_SIZE, maxWaitMs: BATCH_WAIT_MS }` on its one handler, which hands
// every payload of the batch to the Probe and then waits TX_MS (0: returns at once), standing in
// for one database transaction per batch. Timed by the same Probe as the hand-written loop.
import 'reflect-metadata';
import { setTimeout as sleep } from 'node:timers/promises';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EventPattern, Payload } from '@nestjs/microservices';
import { RedisStreamsServer } from 'nest-redis-streams';
import { Probe, envNumber } from './probe.js';

const env = process.env;
const txMs = envNumber('TX_MS', 0);
const probe = new Probe(envNumber('EXPECT'), envNumber('WARMUP', 0), env.LATENCY === '1');

@Controller()
class BenchHandlers {
  @EventPattern(env.STREAM!, { batch: { maxSize: envNumber('BATCH_SIZE'), maxWaitMs: envNumber('BATCH_WAIT_MS', 0) } })
  handle(@Payload() payloads: unknown[]): Promise<void> | void {
    for (const data of payloads) probe.handle(data);
    if (txMs > 0) return sleep(txMs);
  }
}

@Module({ controllers: [BenchHandlers] })
class BenchModule {}

async function main(): Promise<void> {
  const server = new RedisStreamsServer({ connection: env.REDIS_URL!, consumer: 'bench', group: env.GROUP! });
  server.events.on('acked', ({ count }) => probe.acknowledged(count));
  const app = await NestFactory.createMicroservice(BenchModule, { strategy: server, logger: false });
  await app.listen();
  probe.ready();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
