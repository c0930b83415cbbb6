// Bytes allocated per entry while a consumer drains a pre-filled stream, and by whom.
//   node dist/bench/tools/alloc-per-entry.js [--entries=100000] [--warmup=20000] [--raw | --pipeline | --batch] [--top=25]
//     [--shipped] [--paced=5000] [--retained | --promoted]
//   (after `npm run bench -- --only=none` or the two tsc builds bench/run.mjs runs)
//
// Method: V8's sampling heap profiler (HeapProfiler.startSampling through node:inspector) with
// includeObjectsCollectedByMajorGC and includeObjectsCollectedByMinorGC, so that garbage counts as
// well as what survives: a sample is taken about every `samplingInterval` bytes of allocation and
// V8 scales the samples to an estimate of every byte allocated. Calibrated here on a loop that
// allocates a known 832 bytes per turn: 846 bytes measured. Forced-GC `process.memoryUsage()`
// deltas cannot measure this (they see what is retained, not what was allocated and collected).
//
// The consumer runs in this process, shaped like row 2's child (bench/children/transport-consumer):
// a Nest microservice, one `@EventPattern` handler with `@Payload()` that only counts, concurrency
// 64 and prefetchCount 500. Sampling starts once `--warmup` entries are acked (optimised code, a
// steady heap) and stops when `--entries` more are; the figure is the estimate / entries acked in
// between. `--raw` measures the hand-written loop of row 1 instead, in this same process (NestJS
// loaded), as the reference; `--pipeline` the transport with `directHandlers: false` (every entry
// through Nest's pipeline, the way handlers ran before direct handlers became the default);
// `--shipped` the transport with no options at all (row 9: default concurrency and read-ahead);
// `--batch` a no-op batch handler as row 11 runs it (maxSize 500, maxWaitMs 20, other options default).
// `--paced=N` feeds the consumer from the latency row's paced producer at N entries/s instead of a
// pre-filled backlog: reads then return a few entries each, so what a read, an ack flush and a
// promise chain cost per round trip is spread over a few entries, as in the latency row.
import 'reflect-metadata';
import { Session } from 'node:inspector';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EventPattern, Payload } from '@nestjs/microservices';
import { Redis } from 'ioredis';
import { RedisStreamsServer } from 'nest-redis-streams';
import { BenchChild } from '../support/bench-child.js';
import { prefill } from '../support/prefill.js';
import { startPrivateRedis } from '../support/redis.js';
import { RAW_READ_COUNT, THROUGHPUT_SETTINGS } from '../settings.js';

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

const arg = (name: string, fallback: number) => {
  const raw = process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  return raw === undefined ? fallback : Number(raw);
};
const ENTRIES = arg('entries', 100_000);
const WARMUP = arg('warmup', 20_000);
const TOP = arg('top', 25);
const RAW = process.argv.includes('--raw');
/** Every handler through Nest's pipeline (`directHandlers: false`); direct handlers are the default. */
const PIPELINE = process.argv.includes('--pipeline');
const BATCH = process.argv.includes('--batch');
/** No options at all (row 9, the README's first handler): the issue's "as shipped" target. */
const SHIPPED = process.argv.includes('--shipped');
const PACED = arg('paced', 0);
/** Only what is still alive when sampling stops: who holds on to objects (the GC's survivors). */
const RETAINED = process.argv.includes('--retained');
/**
 * Only what survived a scavenge (promoted to the old generation), dead or alive when sampling
 * stops: the objects that grow the old generation and bring on mark-compacts.
 */
const PROMOTED = process.argv.includes('--promoted');
const STREAM = 'alloc:drain';
const GROUP = 'alloc';
const SAMPLING_INTERVAL = 4_096;

const session = new Session();
session.connect();
const post = <T>(method: string, params?: object) =>
  new Promise<T>((resolve, reject) => session.post(method, params, (err, result) => (err ? reject(err) : resolve(result as T))));

/** Starts sampling after `warmup` acked entries and stops after `entries` more. */
class Window {
  private acked = 0;
  private startedAt = -1;
  private readonly done: Promise<{ profile: { head: ProfileNode }; entries: number }>;
  private finish!: (entries: number) => void;

  constructor() {
    const ended = new Promise<number>((resolve) => (this.finish = resolve));
    this.done = ended.then(async (entries) => ({
      ...(await post<{ profile: { head: ProfileNode } }>('HeapProfiler.stopSampling')),
      entries,
    }));
  }

  result() {
    return this.done;
  }

  count(n: number): void {
    this.acked += n;
    if (this.startedAt < 0 && this.acked >= WARMUP) {
      this.startedAt = this.acked;
      // Synchronous in effect: the session dispatches the command before post() returns.
      void post('HeapProfiler.startSampling', {
        samplingInterval: SAMPLING_INTERVAL,
        includeObjectsCollectedByMajorGC: !RETAINED,
        includeObjectsCollectedByMinorGC: !RETAINED && !PROMOTED,
      });
    } else if (this.startedAt >= 0 && this.acked - this.startedAt >= ENTRIES) {
      const entries = this.acked - this.startedAt;
      this.startedAt = Number.POSITIVE_INFINITY;
      this.finish(entries);
    }
  }
}

const window = new Window();

@Controller()
class AllocHandlers {
  @EventPattern(STREAM)
  handle(@Payload() data: unknown): void {
    if (data === undefined) throw new Error('no payload');
  }
}

@Module({ controllers: [AllocHandlers] })
class AllocModule {}

@Controller()
class AllocBatchHandlers {
  @EventPattern(STREAM, { batch: { maxSize: 500, maxWaitMs: 20 } })
  handle(@Payload() data: unknown[]): void {
    if (data.length === 0) throw new Error('no payload');
  }
}

@Module({ controllers: [AllocBatchHandlers] })
class AllocBatchModule {}

async function runTransport(url: string): Promise<() => Promise<void>> {
  const throughput = { concurrency: THROUGHPUT_SETTINGS.concurrency, prefetchCount: THROUGHPUT_SETTINGS.prefetchCount };
  const server = new RedisStreamsServer({
    connection: url,
    consumer: 'alloc',
    group: GROUP,
    startId: '0',
    ...(BATCH || SHIPPED ? {} : throughput),
    ...(PIPELINE ? { directHandlers: false } : {}),
  });
  server.events.on('acked', ({ count }) => window.count(count));
  const app = await NestFactory.createMicroservice(BATCH ? AllocBatchModule : AllocModule, { strategy: server, logger: false });
  await app.listen();
  return () => app.close();
}

/** Row 1's loop: XREADGROUP COUNT 500, JSON.parse of each entry's data, one XACK per batch. */
async function runRaw(url: string): Promise<() => Promise<void>> {
  const redis = new Redis(url);
  await redis.xgroup('CREATE', STREAM, GROUP, '0', 'MKSTREAM');
  let stopped = false;
  // Paced: a blocking read, as the latency row's loop does; a backlog: read until it is empty.
  const block: (string | number)[] = PACED > 0 ? ['BLOCK', 1_000] : [];
  const loop = (async () => {
    while (!stopped) {
      const reply = (await redis.call(
        'XREADGROUP',
        'GROUP',
        GROUP,
        'raw',
        'COUNT',
        RAW_READ_COUNT,
        ...block,
        'STREAMS',
        STREAM,
        '>',
      )) as [string, [string, string[]][]][] | null;
      const entries = reply?.[0]?.[1] ?? [];
      if (entries.length === 0) {
        if (PACED > 0) continue;
        break;
      }
      const ids: string[] = [];
      for (const [id, fields] of entries) {
        for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === 'data') JSON.parse(fields[i + 1]);
        ids.push(id);
      }
      window.count(Number(await redis.xack(STREAM, GROUP, ...ids)));
    }
  })();
  return async () => {
    stopped = true;
    await loop;
    await redis.quit();
  };
}

function packageOf(url: string): string {
  if (url.includes('/libs/nest-redis-streams/')) return 'nest-redis-streams';
  const dep = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (dep) return dep[1];
  if (url.startsWith('node:')) return 'node core';
  return url.includes('/dist/bench/') ? 'bench' : 'other';
}

const place = ({ functionName, url, lineNumber }: ProfileNode['callFrame']) =>
  `${functionName || '(anonymous)'} ${url.replace(/^.*node_modules\//, '').replace(/^.*\/libs\/nest-redis-streams\/dist\//, 'lib/')}:${lineNumber + 1}`;

/**
 * Bytes by package and by function. Frames without a script (V8 builtins such as Promise or
 * Array constructors) are charged to the nearest caller that has one: that is the code to change.
 */
function breakdown(head: ProfileNode) {
  const byPackage = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let total = 0;
  const add = (map: Map<string, number>, key: string, n: number) => map.set(key, (map.get(key) ?? 0) + n);
  const walk = (node: ProfileNode, owner: ProfileNode | null) => {
    const self = node.callFrame.url ? node : owner;
    if (node.selfSize > 0) {
      total += node.selfSize;
      add(byPackage, self ? packageOf(self.callFrame.url) : '(VM)', node.selfSize);
      add(byFunction, self ? place(self.callFrame) : '(VM)', node.selfSize);
    }
    for (const child of node.children) walk(child, self);
  };
  walk(head, null);
  return { total, byPackage, byFunction };
}

function print(map: Map<string, number>, entries: number, count: number): void {
  for (const [key, bytes] of [...map].sort((a, b) => b[1] - a[1]).slice(0, count)) {
    console.log(`${(bytes / entries).toFixed(0).padStart(7)} B  ${key}`);
  }
}

async function main(): Promise<void> {
  const redisServer = await startPrivateRedis();
  let stop: (() => Promise<void>) | null = null;
  try {
    const produced = WARMUP + ENTRIES + 2 * THROUGHPUT_SETTINGS.prefetchCount;
    if (PACED === 0) await prefill(redisServer.url, STREAM, produced);
    stop = RAW ? await runRaw(redisServer.url) : await runTransport(redisServer.url);
    const producer =
      PACED > 0
        ? await BenchChild.start('paced-producer', { REDIS_URL: redisServer.url, STREAM, RATE: PACED, TOTAL: produced })
        : null;
    const { profile, entries } = await window.result();
    await producer?.stop();
    const { total, byPackage, byFunction } = breakdown(profile.head);
    console.log(
      `${RAW ? 'hand-written loop' : PIPELINE ? "transport, Nest's pipeline" : BATCH ? 'transport, batch handler' : 'transport'}: ${(total / entries / 1024).toFixed(2)} KB ${RETAINED ? 'retained' : PROMOTED ? 'promoted' : 'allocated'} per entry ` +
        `(${entries} entries after ${WARMUP} warm-up${PACED > 0 ? `, paced at ${PACED}/s` : ''}, sampling every ${SAMPLING_INTERVAL} B, ${RETAINED ? 'live objects only' : PROMOTED ? 'objects that survived a scavenge' : 'collected objects included'})`,
    );
    console.log('\nBy package (builtins charged to their caller):');
    print(byPackage, entries, 12);
    console.log('\nBy function:');
    print(byFunction, entries, TOP);
  } finally {
    await stop?.();
    session.disconnect();
    await redisServer.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
