// How long after a dead consumer's entry becomes claimable this transport runs it again: the CLAIM
// read (Redis 8.4+, the default) against `claimReads: false` (the reclaimer's XAUTOCLAIM round).
//   node dist/bench/tools/claim-rerun.js [--rounds=8] [--min-idle=1000] [--rate=1000]
//   (after `npm run bench -- --only=none`; NRS_REDIS_SERVER picks the redis-server binary)
//
// Each round writes one entry and, in the same transaction, hands it to a consumer that never
// acks ("dead"). The entry becomes claimable `--min-idle` ms later; the figure is the moment its
// handler starts in the transport's consumer minus that moment. Three modes, each with its own
// group and a consumer of its own (a Nest microservice, no options but minIdleTimeMs):
//   claim, idle     CLAIM reads, nothing else arrives: the loop sends the next CLAIM read when the
//                   last one said the oldest pending entry would be claimable
//   claim, busy     CLAIM reads while `--rate` fresh entries/s arrive: CLAIM reads at most a second
//                   apart between plain reads
//   reclaimer       claimReads: false: the next XAUTOCLAIM round (reclaimIntervalMs, 5 s by default)
// The dead consumer's transaction may also take fresh entries the live consumer has not read yet;
// those are acked at once and not counted.
import 'reflect-metadata';
import { Controller, type INestMicroservice, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EventPattern, Payload } from '@nestjs/microservices';
import { Redis } from 'ioredis';
import { JsonCodec, RedisStreamsServer, encodeEnvelope } from 'nest-redis-streams';
import { redisVersion, startPrivateRedis } from '../support/redis.js';

const arg = (name: string, fallback: number) => {
  const raw = process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  return raw === undefined ? fallback : Number(raw);
};
const ROUNDS = arg('rounds', 8);
const MIN_IDLE = arg('min-idle', 1_000);
const RATE = arg('rate', 1_000);
const STREAM = 'rerun:orders';
/** The server's default reclaimIntervalMs, which the reclaimer mode keeps. */
const RECLAIM_INTERVAL_MS = 5_000;
const codec = new JsonCodec();

/** Handler start times of the dead entries, by round. */
const startedAt = new Map<number, number>();

@Controller()
class RerunHandlers {
  @EventPattern(STREAM)
  handle(@Payload() data: { round?: number }): void {
    if (data.round !== undefined && !startedAt.has(data.round)) startedAt.set(data.round, Date.now());
  }
}

@Module({ controllers: [RerunHandlers] })
class RerunModule {}

async function startConsumer(url: string, group: string, claimReads: boolean): Promise<INestMicroservice> {
  const server = new RedisStreamsServer({ connection: url, consumer: 'live', group, minIdleTimeMs: MIN_IDLE, claimReads });
  const app = await NestFactory.createMicroservice(RerunModule, { strategy: server, logger: false });
  await app.listen();
  return app;
}

/** Fresh entries at `RATE`/s until stopped, so that the live consumer's reads find work. */
function feed(url: string): () => Promise<void> {
  const redis = new Redis(url);
  let stopped = false;
  const fields = encodeEnvelope({ data: { filler: true } }, codec);
  const done = (async () => {
    const perTick = Math.max(1, Math.round(RATE / 100));
    while (!stopped) {
      const pipeline = redis.pipeline();
      for (let i = 0; i < perTick; i++) pipeline.xadd(STREAM, '*', ...fields);
      await pipeline.exec();
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  })();
  return async () => {
    stopped = true;
    await done;
    await redis.quit();
  };
}

async function until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}.`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

async function measure(redis: Redis, url: string, mode: string, claimReads: boolean, busy: boolean): Promise<number[]> {
  const group = `rerun-${mode.replace(/\W+/g, '-')}`;
  await redis.xgroup('CREATE', STREAM, group, '$', 'MKSTREAM');
  const app = await startConsumer(url, group, claimReads);
  const stopFeed = busy ? feed(url) : async () => {};
  const waits: number[] = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      // A random start within the path's period (a CLAIM read at most a second apart, the
      // reclaimer's 5 s round), so that the rounds do not fall into step with it.
      await new Promise((resolve) => setTimeout(resolve, Math.random() * (claimReads ? 1_000 : RECLAIM_INTERVAL_MS)));
      startedAt.delete(round);
      const sentAt = Date.now();
      const [, [, reply]] = (await redis
        .multi()
        .xadd(STREAM, '*', ...encodeEnvelope({ data: { round } }, codec))
        .xreadgroup('GROUP', group, 'dead', 'COUNT', 1_000, 'STREAMS', STREAM, '>')
        .exec()) as [[null, string], [null, [[string, [string, string[]][]]]]];
      const deadId = reply[0][1].at(-1)![0];
      const filler = reply[0][1].slice(0, -1).map(([id]) => id);
      if (filler.length > 0) await redis.xack(STREAM, group, ...filler);
      // Redis stamps the delivery when the transaction runs, at or after sentAt.
      const claimableAt = sentAt + MIN_IDLE;
      await until(() => startedAt.has(round), MIN_IDLE + 30_000, `round ${round} of "${mode}" to run again`);
      waits.push(startedAt.get(round)! - claimableAt);
      await redis.xack(STREAM, group, deadId);
    }
  } finally {
    await stopFeed();
    await app.close();
  }
  return waits;
}

async function main(): Promise<void> {
  const server = await startPrivateRedis();
  const redis = new Redis(server.url);
  try {
    const version = await redisVersion(redis);
    const hasClaim = Number(version.split('.')[0]) * 100 + Number(version.split('.')[1]) >= 804;
    const modes: [string, boolean, boolean][] = [
      ...(hasClaim
        ? ([
            ['claim, idle', true, false],
            ['claim, busy', true, true],
          ] as [string, boolean, boolean][])
        : []),
      ['reclaimer', false, false],
    ];
    console.log(`Redis ${version}, minIdleTimeMs ${MIN_IDLE}, ${ROUNDS} rounds; busy: ${RATE} fresh entries/s`);
    console.log('mode          claimable → handler start, ms (each round)            median');
    for (const [mode, claimReads, busy] of modes) {
      const waits = await measure(redis, server.url, mode, claimReads, busy);
      const median = [...waits].sort((a, b) => a - b)[Math.floor(waits.length / 2)];
      console.log(`${mode.padEnd(13)} ${waits.join(', ').padEnd(52)} ${median}`);
    }
    if (!hasClaim) console.log('(no CLAIM on this server: Redis 8.4+ only)');
  } finally {
    redis.disconnect();
    await server.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
