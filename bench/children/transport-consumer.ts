// This transport: a Nest microservice with RedisStreamsServer and one @EventPattern handler,
// configured through environment variables by bench/main and timed by the same Probe as the
// hand-written loop.
import 'reflect-metadata';
import { setTimeout as sleep } from 'node:timers/promises';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EventPattern, Payload } from '@nestjs/microservices';
import { RedisStreamsServer } from 'nest-redis-streams';
import { Probe, envNumber } from './probe.js';

const env = process.env;
const sleepMs = envNumber('SLEEP_MS', 0);
const probe = new Probe(envNumber('EXPECT'), envNumber('WARMUP', 0), env.LATENCY === '1');
/** A tuning option the run sets, or undefined: the defaults row sets none, so the library's apply. */
const optional = (name: string) => (env[name] === undefined ? undefined : envNumber(name));

@Controller()
class BenchHandlers {
  // Not async: the no-op row measures the transport, not an extra promise per entry.
  @EventPattern(env.STREAM!, env.PARTITIONS === undefined ? {} : { partitions: envNumber('PARTITIONS') })
  handle(@Payload() data: unknown): Promise<void> | void {
    probe.handle(data);
    if (sleepMs > 0) return sleep(sleepMs);
  }
}

@Module({ controllers: [BenchHandlers] })
class BenchModule {}

async function main(): Promise<void> {
  const server = new RedisStreamsServer({
    // The cluster row passes the seed nodes; every other row one redis-server.
    connection: env.CLUSTER_NODES ? { cluster: JSON.parse(env.CLUSTER_NODES) } : env.REDIS_URL!,
    consumer: 'bench',
    group: env.GROUP!,
    concurrency: optional('CONCURRENCY'),
    prefetchCount: optional('PREFETCH'),
    // The memory row shortens it so its consumer notices the group being rewound soon; a blocking
    // read returns at once when entries arrive, so it does not change throughput or latency.
    blockMs: optional('BLOCK_MS'),
    // The pipeline rows (2d, 4, 6) force Nest's per-message pipeline; every other row runs as shipped.
    directHandlers: env.DIRECT_HANDLERS === 'false' ? false : undefined,
    // bench/tools/redis-work-per-entry: the cheap-ack side of "CLAIM reads and cheap acks".
    claimReads: env.CLAIM_READS === 'false' ? false : undefined,
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
