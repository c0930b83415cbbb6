import { Redis } from 'ioredis';
import { type SearchResult, StreamOperations, partitionStream } from 'nest-redis-streams';
import { unique } from '../support/helpers.js';

const { startRedis } = require('../../scripts/lib/redis-process.cjs') as {
  startRedis(): Promise<{ url: string; stop(): Promise<void> }>;
};

/** 30 entries of 512 KB, as the issue walked them. */
const ENTRIES = 30;
const BLOB = 512 * 1024;
/** INFO's own reply and the protocol around each entry: far less than an entry. */
const SLACK = 16 * 1024;

/**
 * What a search costs Redis when its time budget is small and its entries are large: each request
 * must fetch about what it looks at, never pages it will not look at (they are fetched again by the
 * next request). Bytes are measured on a private server (INFO stats total_net_output_bytes), so no
 * other test's traffic counts.
 */
describe('a search time budget bounds what its reads fetch (private redis-server)', () => {
  let server: { url: string; stop(): Promise<void> };
  let redis: Redis;
  let admin: Redis;

  beforeAll(async () => {
    server = await startRedis();
    redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
    admin = new Redis(server.url, { maxRetriesPerRequest: 1 });
  }, 60_000);
  afterAll(async () => {
    await Promise.all([redis?.quit(), admin?.quit()]);
    await server?.stop();
  });

  const sent = async () => Number(/total_net_output_bytes:(\d+)/.exec(await admin.info('stats'))![1]);

  /** `n` entries of one `data` field holding a 512 KB JSON payload, the n-th at id `from + n * step`. */
  async function fill(stream: string, n: number, from = 1, step = 1): Promise<number> {
    let bytes = 0;
    for (let i = 0; i < n; i++) {
      const data = JSON.stringify({ n: from + i * step, blob: 'x'.repeat(BLOB) });
      bytes += data.length;
      await redis.xadd(stream, `${from + i * step}-0`, 'data', data);
    }
    return bytes;
  }

  /** Walks with `budgetMs: 1` to the end, recording each request's answer and the bytes Redis sent for it. */
  async function walk(ops: StreamOperations, stream: string, request: Parameters<StreamOperations['search']>[1]) {
    const requests: Array<{ answer: SearchResult; bytes: number }> = [];
    let cursor: string | undefined;
    do {
      const before = await sent();
      const answer = await ops.search(stream, cursor ? { ...request, newest: undefined, cursor } : request);
      requests.push({ answer, bytes: (await sent()) - before });
      cursor = answer.cursor ?? undefined;
    } while (cursor && requests.length < 500);
    return requests;
  }

  /** The requests whose reads fetched more than the entries they looked at and `extra` more (none, when bounded). */
  function overfetched(requests: Array<{ answer: SearchResult; bytes: number }>, entry: number, extra: number) {
    return requests
      .map(({ answer, bytes }, i) => ({ request: i, scanned: answer.scanned, entries: +(bytes / entry).toFixed(1) }))
      .filter((r, i) => requests[i].bytes > (r.scanned + extra) * entry + SLACK);
  }

  const where = 'payload.n > 0';
  it.each([
    ['oldest first', {}],
    ['newest first', { newest: true }],
    ["a group's pending entries", { group: 'g' }],
  ] as const)(
    '%s: each request fetches what it looks at and at most one entry more; the walk costs under 2x the data',
    async (_, mode) => {
      const stream = unique('search-cost');
      const data = await fill(stream, ENTRIES);
      if ('group' in mode) {
        await redis.xgroup('CREATE', stream, 'g', '0');
        await redis.xreadgroup('GROUP', 'g', 'c1', 'COUNT', 1, 'STREAMS', stream, '>');
        for (let i = 1; i < ENTRIES; i++) await redis.xreadgroup('GROUP', 'g', 'c1', 'COUNT', 1, 'STREAMS', stream, '>');
      }
      const ops = new StreamOperations(redis, { streams: [stream] });
      const requests = await walk(ops, stream, { where, budgetMs: 1, ...mode });
      const entry = data / ENTRIES;
      expect(requests.reduce((sum, r) => sum + r.answer.matched, 0)).toBe(ENTRIES);
      expect(overfetched(requests, entry, 1)).toEqual([]);
      const total = requests.reduce((sum, r) => sum + r.bytes, 0);
      expect(total / data).toBeLessThan(2);
    },
    120_000,
  );

  it('over partitions, each request fetches what it looks at and at most one entry more per partition', async () => {
    const stream = unique('search-cost-part');
    const data = (await fill(partitionStream(stream, 0), 10, 1, 2)) + (await fill(partitionStream(stream, 1), 10, 2, 2));
    const ops = new StreamOperations(redis, { streams: [0, 1].map((p) => partitionStream(stream, p)) });
    const requests = await walk(ops, stream, { where, budgetMs: 1, partitions: 2 });
    const entry = data / 20;
    expect(requests.flatMap((r) => r.answer.items.map((h) => Number(h.id.split('-')[0])))).toEqual(
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
    expect(overfetched(requests, entry, 2)).toEqual([]);
  }, 120_000);
});
