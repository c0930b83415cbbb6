// What a search costs: Redis time per 10,000 entries scanned, for each kind of search, on a private
// redis-server. Redis time is the `usec` of the commands the search sends (INFO commandstats, reset
// before each row: XRANGE/XREVRANGE/XPENDING), and the server's CPU (INFO cpu) beside it; wall
// time is the whole request seen from the client (reads, decoding, matching).
// `npx tsc -p libs/nest-redis-streams/tsconfig.build.json && npx tsc -p bench/tsconfig.json &&
//  node dist/bench/tools/search-cost.js` (npm run bench builds both too).
import { Redis } from 'ioredis';
import { type SearchRequest, StreamOperations, partitionStream } from 'nest-redis-streams';
import { prefill } from '../support/prefill.js';
import { redisCpuMs, redisVersion, startPrivateRedis } from '../support/redis.js';

const ENTRIES = 100_000;
const PENDING = 20_000;
const PARTITIONS = 8;

interface Row {
  search: string;
  scanned: number;
  matched: number;
  wallMs: number;
  redisUsec: number;
  redisCpuMs: number;
}

/** Sum of `usec` over the stream reads in INFO commandstats. */
async function commandUsec(redis: Redis): Promise<number> {
  const info = await redis.info('commandstats');
  let usec = 0;
  for (const match of info.matchAll(/cmdstat_(xrange|xrevrange|xpending):calls=\d+,usec=(\d+)/g)) usec += Number(match[2]);
  return usec;
}

/** Runs `request` to the end of its window (resuming from the cursor), measuring the whole of it. */
async function measure(redis: Redis, ops: StreamOperations, label: string, stream: string, request: SearchRequest): Promise<Row> {
  await redis.config('RESETSTAT');
  const cpuBefore = await redisCpuMs(redis);
  const started = performance.now();
  let scanned = 0;
  let matched = 0;
  let cursor: string | undefined;
  do {
    const answer = await ops.search(stream, cursor ? { ...request, since: undefined, newest: undefined, cursor } : request);
    scanned += answer.scanned;
    matched += answer.matched;
    cursor = answer.cursor ?? undefined;
  } while (cursor);
  const wallMs = performance.now() - started;
  return {
    search: label,
    scanned,
    matched,
    wallMs,
    redisUsec: await commandUsec(redis),
    redisCpuMs: (await redisCpuMs(redis)) - cpuBefore,
  };
}

const per10k = (value: number, scanned: number) => (scanned === 0 ? 0 : (value * 10_000) / scanned);

function render(rows: Row[]): string {
  const head = ['search', 'scanned', 'matched', 'wall ms', 'wall ms /10k', 'Redis ms /10k (commands)', 'Redis CPU ms /10k'];
  const body = rows.map((r) => [
    r.search,
    String(r.scanned),
    String(r.matched),
    r.wallMs.toFixed(0),
    per10k(r.wallMs, r.scanned).toFixed(1),
    per10k(r.redisUsec / 1_000, r.scanned).toFixed(2),
    per10k(r.redisCpuMs, r.scanned).toFixed(1),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) =>
    `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ')} |`;
  return [
    line(head),
    `|${widths.map((w, i) => (i === 0 ? '-'.repeat(w + 2) : `${'-'.repeat(w + 1)}:`)).join('|')}|`,
    ...body.map(line),
  ].join('\n');
}

async function main(): Promise<void> {
  const server = await startPrivateRedis();
  const redis = new Redis(server.url);
  try {
    const stream = 'bench:search';
    await prefill(server.url, stream, ENTRIES);
    await redis.xgroup('CREATE', stream, 'g', '0');
    await redis.xreadgroup('GROUP', 'g', 'c1', 'COUNT', PENDING, 'STREAMS', stream, '>');
    const partitioned = 'bench:search-parts';
    for (let p = 0; p < PARTITIONS; p++) await prefill(server.url, partitionStream(partitioned, p), ENTRIES / PARTITIONS);
    const ops = new StreamOperations(redis, {
      streams: [stream, ...Array.from({ length: PARTITIONS }, (_, p) => partitionStream(partitioned, p))],
    });
    // Every 100th order matches (ord-100, ord-200, ...): a selective condition over the payload.
    const where = 'payload.quantity == 2 && payload.orderId endsWith "00"';
    const rows = [
      await measure(redis, ops, 'stream, no condition, pages of 50', stream, { budgetEntries: ENTRIES, limit: 50 }),
      await measure(redis, ops, 'stream, payload condition, oldest first', stream, {
        where,
        budgetEntries: ENTRIES,
        limit: 1_000,
      }),
      await measure(redis, ops, 'stream, payload condition, newest first', stream, {
        where,
        newest: true,
        budgetEntries: ENTRIES,
        limit: 1_000,
      }),
      await measure(redis, ops, 'stream, fields condition (no JSON decode)', stream, {
        where: 'fields.v == "nrs/2"',
        budgetEntries: ENTRIES,
      }),
      await measure(redis, ops, `PEL of ${PENDING} (XPENDING + XRANGE per entry)`, stream, {
        group: 'g',
        where,
        budgetEntries: PENDING,
        limit: 1_000,
      }),
      await measure(redis, ops, `${PARTITIONS} partitions merged, newest first`, partitioned, {
        partitions: PARTITIONS,
        where,
        newest: true,
        budgetEntries: ENTRIES,
        limit: 1_000,
      }),
    ];
    console.log(
      `\nSearch cost on redis-server ${await redisVersion(redis)}, ${ENTRIES} envelope entries (${new Date().toISOString()}):\n`,
    );
    console.log(render(rows));
  } finally {
    redis.disconnect();
    await server.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
