// The limit: the loop one would hand-write with ioredis, no framework. One XREADGROUP of up to
// RAW_READ_COUNT entries, JSON.parse of each entry's `data` field, one multi-id XACK per batch.
import { Redis } from 'ioredis';
import { Probe, envNumber } from './probe.js';

type ReadReply = Array<[stream: string, entries: Array<[id: string, fields: string[]]>]> | null;

const env = process.env;
const stream = env.STREAM!;
const group = env.GROUP!;
const count = envNumber('READ_COUNT');
const probe = new Probe(envNumber('EXPECT'), envNumber('WARMUP', 0), env.LATENCY === '1');

function dataField(fields: string[]): string {
  for (let i = 0; i < fields.length; i += 2) if (fields[i] === 'data') return fields[i + 1];
  throw new Error('Entry without a data field.');
}

/**
 * LOAD_NEST=1: the same loop in a process that has imported NestJS and this library (and uses
 * neither). It separates what the framework's mere presence costs (a larger heap that V8
 * collects differently) from what the transport does per entry.
 */
async function loadNest(): Promise<unknown[]> {
  await import('reflect-metadata');
  return Promise.all([
    import('@nestjs/core'),
    import('@nestjs/microservices'),
    import('@nestjs/schedule'),
    import('nest-redis-streams'),
  ]);
}

async function main(): Promise<void> {
  const loaded = env.LOAD_NEST === '1' ? await loadNest() : [];
  // Kept reachable for the whole run, as an application keeps its modules.
  (globalThis as { benchModules?: unknown[] }).benchModules = loaded;
  const redis = new Redis(env.REDIS_URL!);
  // The memory row creates the group itself (at the end of the stream); elsewhere it is new.
  await redis.xgroup('CREATE', stream, group, '0', 'MKSTREAM').catch((err: Error) => {
    if (!err.message.startsWith('BUSYGROUP')) throw err;
  });
  probe.ready();
  while (!probe.done) {
    // BLOCK only matters in the latency run, where the stream is often empty.
    const reply = (await redis.xreadgroup(
      'GROUP',
      group,
      'raw',
      'COUNT',
      count,
      'BLOCK',
      1_000,
      'STREAMS',
      stream,
      '>',
    )) as ReadReply;
    const entries = reply?.[0][1] ?? [];
    if (entries.length === 0) continue;
    const ids = new Array<string>(entries.length);
    for (let k = 0; k < entries.length; k++) {
      ids[k] = entries[k][0];
      probe.handle(JSON.parse(dataField(entries[k][1])));
    }
    await redis.xack(stream, group, ...ids);
    probe.acknowledged(ids.length);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
