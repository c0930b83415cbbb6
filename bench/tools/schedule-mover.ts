// The schedule's cost: how fast delayed emits are scheduled and how fast a mover moves due entries
// into the stream, with Redis CPU per entry beside a plain XADD of the same entries.
//   node dist/bench/tools/schedule-mover.js [--entries=50000] [--batches=10,100,500]
//   (after `node scripts/build-lib.mjs` and `node node_modules/typescript/bin/tsc -p bench/tsconfig.json`)
//
// Method: a private redis-server (no persistence). Each batch size gets a fresh stream: `--entries`
// delayed emits (delayMs 1, 1,000 in flight) through RedisStreamsClient fill its schedule; once
// they are due, one ScheduleMover moves them all (`moveNow`: script calls of `batch` entries until
// none is due). Redis CPU is INFO cpu (user + sys) before and after each phase, over the entries;
// the baseline row XADDs the same envelopes straight to a stream with the same client (emit()).
// One run per row: the figures move by ~10% between runs on a shared machine.
import { Redis } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { RedisStreamsClient, ScheduleMover } from 'nest-redis-streams';
import { redisCpuMs, redisVersion, startPrivateRedis } from '../support/redis.js';
import { type ResultRow, renderTable } from '../support/table.js';

const arg = (name: string, fallback: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const ENTRIES = Number(arg('entries', '50000'));
const BATCHES = arg('batches', '10,100,500').split(',').map(Number);
const IN_FLIGHT = 1_000;
const silent = { warn: (m: string) => console.warn(m), log: () => undefined };

/** Emits `count` entries of a realistic size, `IN_FLIGHT` at a time; resolves with the elapsed ms. */
async function emitAll(client: RedisStreamsClient, stream: string, count: number, delayed: boolean): Promise<number> {
  const started = performance.now();
  for (let from = 0; from < count; from += IN_FLIGHT) {
    const chunk = Array.from({ length: Math.min(IN_FLIGHT, count - from) }, (_, i) => {
      const order = { orderId: `o-${from + i}`, amount: 42.5, currency: 'EUR', customer: `c-${(from + i) % 977}` };
      return lastValueFrom(delayed ? client.emit(stream, order, { delayMs: 1 }) : client.emit(stream, order));
    });
    await Promise.all(chunk);
  }
  return performance.now() - started;
}

/** Runs `phase` and answers how long it took and the Redis CPU it cost, per entry. */
async function measure(
  redis: Redis,
  count: number,
  phase: () => Promise<unknown>,
): Promise<{ perSecond: number; cpuUs: number }> {
  const cpuBefore = await redisCpuMs(redis);
  const started = performance.now();
  await phase();
  const ms = performance.now() - started;
  const cpuMs = (await redisCpuMs(redis)) - cpuBefore;
  return { perSecond: (count / ms) * 1_000, cpuUs: (cpuMs * 1_000) / count };
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

async function main(): Promise<void> {
  const server = await startPrivateRedis();
  const redis = new Redis(server.url);
  const client = new RedisStreamsClient({ connection: server.url });
  const rows: ResultRow[] = [];
  try {
    const baseline = await measure(redis, ENTRIES, () => emitAll(client, 'bench:plain', ENTRIES, false));
    rows.push(row('S0', 'emit() now (XADD), baseline', `${fmt(ENTRIES)} entries`, baseline));
    for (const batch of BATCHES) {
      const stream = `bench:delayed:${batch}`;
      const scheduled = await measure(redis, ENTRIES, () => emitAll(client, stream, ENTRIES, true));
      if (batch === BATCHES[0]) rows.push(row('S1', 'emit() delayed (schedule script)', `${fmt(ENTRIES)} entries`, scheduled));
      const mover = new ScheduleMover(redis, [stream], { checkMs: 1_000, batch, idmp: false }, silent);
      let moved = 0;
      const moving = await measure(redis, ENTRIES, async () => (moved = (await mover.moveNow(stream)).moved));
      if (moved !== ENTRIES || (await redis.xlen(stream)) !== ENTRIES) throw new Error(`Moved ${moved} of ${ENTRIES} entries.`);
      rows.push(row(`S2.${batch}`, 'mover: due entries into the stream', `batch ${batch}`, moving));
    }
    console.log(`redis ${await redisVersion(redis)}, ${ENTRIES} entries per row\n`);
    console.log(renderTable(rows));
  } finally {
    await client.close();
    redis.disconnect();
    await server.stop();
  }
}

function row(id: string, what: string, setting: string, m: { perSecond: number; cpuUs: number }): ResultRow {
  return {
    row: id,
    what,
    setting,
    result: `${fmt(m.perSecond)} entries/s`,
    ratio: `Redis ${m.cpuUs.toFixed(1)} µs/entry`,
    target: '',
  };
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
