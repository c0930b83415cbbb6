// Draining several streams with one server: does one stream's work wait on another's? A server
// has one watched-ack connection (nrs:acks:<consumer>) for all its streams, and WATCH allows one
// transaction at a time on it, so acks asked while a step runs share the next one.
//   node dist/bench/tools/many-streams.js [--streams=8] [--entries=25000] [--rounds=3]
//   (after `npm run bench -- --only=none`; REDIS_URL: a redis-server the machine does not otherwise use)
//
// Per round, `streams` streams of `entries` envelope entries each, then three drains of them, each
// in a fresh group from the first entry:
//   loop      one hand-written ioredis loop per stream (own connection, XREADGROUP COUNT 500,
//             JSON.parse, one multi-id XACK per batch), all at once: the baseline
//   one       this transport, as shipped (no options), one handler on one stream holding all
//             streams x entries entries
//   many      this transport, as shipped, one handler per stream in one server
// Each is timed from listen() (the loop: its first read) until Redis acked everything; the table
// gives msgs/s per round, the median, and each median against the loop's of the same run.
import 'reflect-metadata';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EventPattern, Payload } from '@nestjs/microservices';
import { Redis } from 'ioredis';
import { RedisStreamsServer } from 'nest-redis-streams';
import { prefill } from '../support/prefill.js';

const arg = (name: string, fallback: number) =>
  Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const STREAMS = arg('streams', 8);
const ENTRIES = arg('entries', 25_000);
const ROUNDS = arg('rounds', 3);
const URL_ = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

type ReadReply = Array<[stream: string, entries: Array<[id: string, fields: string[]]>]> | null;

async function loopDrain(streams: string[], group: string): Promise<number> {
  const started = performance.now();
  await Promise.all(
    streams.map(async (stream) => {
      const redis = new Redis(URL_);
      let left = ENTRIES;
      while (left > 0) {
        const reply = (await redis.xreadgroup('GROUP', group, 'loop', 'COUNT', 500, 'STREAMS', stream, '>')) as ReadReply;
        const entries = reply?.[0][1] ?? [];
        for (const [, fields] of entries) JSON.parse(fields[fields.indexOf('data') + 1]);
        if (entries.length > 0) await redis.xack(stream, group, ...entries.map(([id]) => id));
        left -= entries.length;
      }
      redis.disconnect();
    }),
  );
  return performance.now() - started;
}

/** A controller with one `@EventPattern` handler per stream, each only counting. */
function handlersFor(streams: string[]): new () => object {
  class Handlers {}
  streams.forEach((stream, i) => {
    const key = `handle${i}`;
    Object.defineProperty(Handlers.prototype, key, { value: (_data: unknown) => undefined, writable: true });
    Payload()(Handlers.prototype, key, 0);
    EventPattern(stream)(Handlers.prototype, key, Object.getOwnPropertyDescriptor(Handlers.prototype, key)!);
  });
  Controller()(Handlers);
  return Handlers;
}

async function transportDrain(streams: string[], group: string, total: number): Promise<number> {
  @Module({ controllers: [handlersFor(streams)] })
  class BenchModule {}
  const server = new RedisStreamsServer({ connection: URL_, consumer: 'bench', group });
  let acked = 0;
  let done!: () => void;
  const all = new Promise<void>((resolve) => (done = resolve));
  server.events.on('acked', ({ count }) => {
    acked += count;
    if (acked >= total) done();
  });
  const app = await NestFactory.createMicroservice(BenchModule, { strategy: server, logger: false });
  const started = performance.now();
  await app.listen();
  await all;
  const ms = performance.now() - started;
  await app.close();
  return ms;
}

async function createGroups(admin: Redis, streams: string[], group: string): Promise<void> {
  for (const stream of streams) await admin.xgroup('CREATE', stream, group, '0');
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  const admin = new Redis(URL_);
  const rates: Record<'loop' | 'one' | 'many', number[]> = { loop: [], one: [], many: [] };
  for (let round = 0; round < ROUNDS; round++) {
    const tag = `bench-many:${process.pid}:${round}`;
    const streams = Array.from({ length: STREAMS }, (_, i) => `${tag}:s${i}`);
    const single = `${tag}:one`;
    for (const stream of streams) await prefill(URL_, stream, ENTRIES);
    await prefill(URL_, single, STREAMS * ENTRIES);
    const total = STREAMS * ENTRIES;
    await createGroups(admin, streams, 'loop');
    rates.loop.push((total * 1_000) / (await loopDrain(streams, 'loop')));
    await createGroups(admin, [single], 'one');
    rates.one.push((total * 1_000) / (await transportDrain([single], 'one', total)));
    await createGroups(admin, streams, 'many');
    rates.many.push((total * 1_000) / (await transportDrain(streams, 'many', total)));
    // The streams and what the library keeps beside them ({stream}:nrs-… hashes).
    await admin.del(...(await admin.keys(`*${tag}*`)));
  }
  admin.disconnect();
  const loop = median(rates.loop);
  const rows: Array<[string, number[]]> = [
    [`hand-written loops, ${STREAMS} streams`, rates.loop],
    [`this transport as shipped, 1 stream of ${STREAMS * ENTRIES}`, rates.one],
    [`this transport as shipped, ${STREAMS} streams of ${ENTRIES} in one server`, rates.many],
  ];
  console.log(`| drain (${ROUNDS} rounds) | msgs/s per round | median | against the loops |`);
  console.log('| --- | --- | --- | --- |');
  for (const [label, xs] of rows) {
    const per = xs.map((x) => Math.round(x).toLocaleString('en-US')).join(', ');
    console.log(`| ${label} | ${per} | ${Math.round(median(xs)).toLocaleString('en-US')} | ${(median(xs) / loop).toFixed(2)}× |`);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
