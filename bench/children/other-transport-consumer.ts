// Another NestJS Redis Streams transport, @nestjs-redis/streams-transporter, with its own defaults
// (XREADGROUP COUNT 50, each entry's handler awaited and then acked with its own XACK). Only the
// names a run needs are set: the connection, and a stream prefix, group and consumer name that
// put it on the run's stream and a fresh group. Timed by the same Probe as every other consumer.
import 'reflect-metadata';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EventPattern, Payload } from '@nestjs/microservices';
import { RedisStreamServer } from '@nestjs-redis/streams-transporter';
import type { RedisClientType } from 'redis';
import { Probe, envNumber } from './probe.js';

const env = process.env;
const stream = env.STREAM!;
const group = env.GROUP!;
const probe = new Probe(envNumber('EXPECT'), envNumber('WARMUP', 0), env.LATENCY === '1');

// It reads the stream `${streamPrefix}:${pattern}`: split the run's stream name at its last colon.
const split = stream.lastIndexOf(':');
if (split <= 0) throw new Error(`STREAM must look like "prefix:pattern" for this transport (got "${stream}").`);
const streamPrefix = stream.slice(0, split);
const pattern = stream.slice(split + 1);

@Controller()
class BenchHandlers {
  @EventPattern(pattern)
  handle(@Payload() data: unknown): void {
    probe.handle(data);
  }
}

@Module({ controllers: [BenchHandlers] })
class BenchModule {}

async function main(): Promise<void> {
  const server = new RedisStreamServer({ url: env.REDIS_URL!, streamPrefix, consumerGroup: group, consumerName: 'bench' });
  // Connected before listen() (which then skips connecting) so the group can be made first.
  await server.connect();
  const client = server.unwrap<RedisClientType>();
  // It creates its group at `$` (new entries only); the benchmark drains a pre-filled stream.
  await client.xGroupCreate(stream, group, '0', { MKSTREAM: true });
  // Counts what Redis confirmed as acknowledged: XACK's reply, not the number of calls.
  const xAck = client.xAck.bind(client);
  const countingXAck = async (...args: Parameters<typeof xAck>) => {
    const acked = await xAck(...args);
    probe.acknowledged(acked);
    return acked;
  };
  // Typed read-only: an own property in front of the client's method.
  Object.defineProperty(client, 'xAck', { value: countingXAck });
  const app = await NestFactory.createMicroservice(BenchModule, { strategy: server, logger: false });
  await app.listen();
  probe.ready();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
