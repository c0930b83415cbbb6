import { type SearchResult, StreamOperations, partitionStream } from 'nest-redis-streams';
import { deadLetterFields, testContext, unique } from '../support/helpers.js';

const BASE = 1_800_000_000_000;
// The huge-window test reads 30,000 entries in many small requests; on 2 busy cores that passes 5 s.
jest.setTimeout(60_000);

/** An envelope entry as the client writes it, at a chosen id (ids are times). */
function envelope(i: number, payload: object, headers: Record<string, string> = {}): string[] {
  const fields = ['v', 'nrs/1', 'event_id', `e-${i}`, 'data', JSON.stringify(payload), 'published_at', String(BASE + i)];
  if (Object.keys(headers).length) fields.push('headers', JSON.stringify(headers));
  return fields;
}

describe('search over streams, PELs and dead-letter streams (operations layer, real Redis)', () => {
  const { redis } = testContext();

  /** `n` orders at ids BASE+i-0: orderId A<i>, total i*10, tenant t<i % 3>. */
  async function orders(stream: string, n: number, from = 0, step = 1): Promise<void> {
    const pipeline = redis.pipeline();
    for (let i = from; i < from + n * step; i += step)
      pipeline.xadd(stream, `${BASE + i}-0`, ...envelope(i, { orderId: `A${i}`, total: i * 10 }, { tenant: `t${i % 3}` }));
    await pipeline.exec();
  }

  /** Every match of `where`, resumed with the cursor until exhausted, with each answer's figures. */
  async function drain(ops: StreamOperations, stream: string, request: Parameters<StreamOperations['search']>[1]) {
    const answers: SearchResult[] = [];
    let cursor: string | undefined;
    do {
      const answer = await ops.search(
        stream,
        cursor ? { ...request, since: undefined, until: undefined, newest: undefined, cursor } : request,
      );
      answers.push(answer);
      cursor = answer.cursor ?? undefined;
    } while (cursor && answers.length < 1_000);
    return { ids: answers.flatMap((a) => a.items.map((h) => h.id)), answers };
  }

  it('matches fields, headers and the decoded payload, oldest or newest first, inside a window', async () => {
    const stream = unique('search');
    await orders(stream, 30);
    const ops = new StreamOperations(redis, { streams: [stream] });
    const one = await ops.search(stream, { where: 'payload.orderId == "A7"' });
    expect(one).toMatchObject({ scanned: 30, matched: 1, exhausted: true, stoppedBy: null, cursor: null });
    expect(one.items[0]).toMatchObject({ stream, key: stream, id: `${BASE + 7}-0`, time: BASE + 7 });
    expect(one.items[0].fields).toContainEqual(['event_id', 'e-7']);

    const where = 'headers.tenant == "t1" && payload.total >= 100 || fields.event_id in ["e-2", "e-3"]';
    const oldest = await ops.search(stream, { where });
    expect(oldest.items.map((h) => h.id)).toEqual([2, 3, 10, 13, 16, 19, 22, 25, 28].map((i) => `${BASE + i}-0`));
    const newest = await ops.search(stream, { where, newest: true, limit: 3 });
    expect(newest.items.map((h) => h.id)).toEqual([28, 25, 22].map((i) => `${BASE + i}-0`));
    expect(newest).toMatchObject({ scanned: 8, stoppedBy: 'limit', exhausted: false });

    const window = await ops.search(stream, { since: BASE + 10, until: `${BASE + 12}-0` });
    expect(window.items.map((h) => h.id)).toEqual([10, 11, 12].map((i) => `${BASE + i}-0`));
    const isoWindow = await ops.search(stream, { since: new Date(BASE + 28).toISOString(), newest: true });
    expect(isoWindow.items.map((h) => h.id)).toEqual([`${BASE + 29}-0`, `${BASE + 28}-0`]);
    // A duration counts back from now: these entries are in the future (2027), none is in the last hour's past-only window.
    expect((await ops.search(stream, { until: '1h' })).scanned).toBe(0);
  });

  it('stops at the entry budget and resumes from the cursor without duplicates or gaps, both ways', async () => {
    const stream = unique('search-budget');
    await orders(stream, 200);
    const ops = new StreamOperations(redis, { streams: [stream] });
    const where = 'payload.total > 500 && headers.tenant != "t0"';
    const whole = await ops.search(stream, { where, limit: 1_000 });
    expect(whole.exhausted).toBe(true);
    for (const newest of [false, true]) {
      const { ids, answers } = await drain(ops, stream, { where, newest, budgetEntries: 17, limit: 1_000 });
      expect(ids).toEqual(newest ? whole.items.map((h) => h.id).reverse() : whole.items.map((h) => h.id));
      expect(answers.slice(0, -1).every((a) => a.stoppedBy === 'entries' && a.scanned === 17)).toBe(true);
      expect(answers.reduce((sum, a) => sum + a.scanned, 0)).toBe(200);
    }
    // A limit of 4 pages through the matches too.
    const paged = await drain(ops, stream, { where, limit: 4 });
    expect(paged.ids).toEqual(whole.items.map((h) => h.id));
  });

  it('a huge window is bounded by the time budget, and the cursor still resumes exactly', async () => {
    const stream = unique('search-huge');
    const pipeline = redis.pipeline();
    for (let i = 0; i < 30_000; i++) pipeline.xadd(stream, `${BASE + i}-0`, 'data', `{"n":${i},"pad":"${'x'.repeat(40)}"}`);
    await pipeline.exec();
    const ops = new StreamOperations(redis, { streams: [stream] });
    const first = await ops.search(stream, { where: 'payload.n == -1', budgetMs: 1, budgetEntries: 1_000_000 });
    expect(first).toMatchObject({ matched: 0, exhausted: false, stoppedBy: 'time' });
    expect(first.scanned).toBeLessThan(30_000);
    // '%' is no operator: refused before anything is read.
    await expect(ops.search(stream, { where: 'payload.n % 2 == 0' })).rejects.toThrow(/unexpected '%' at column 11/);
    const rest = await drain(ops, stream, { where: 'payload.n >= 29990', budgetMs: 40, budgetEntries: 1_000_000 });
    expect(rest.ids).toEqual(Array.from({ length: 10 }, (_, i) => `${BASE + 29_990 + i}-0`));
    expect(rest.answers.reduce((sum, a) => sum + a.scanned, 0)).toBe(30_000);
  });

  it("searches a group's PEL with the pending row, oldest first only", async () => {
    const stream = unique('search-pel');
    await orders(stream, 10);
    await redis.xgroup('CREATE', stream, 'g', '0');
    await redis.xreadgroup('GROUP', 'g', 'c1', 'COUNT', 4, 'STREAMS', stream, '>');
    await redis.xreadgroup('GROUP', 'g', 'c2', 'COUNT', 3, 'STREAMS', stream, '>');
    await redis.xdel(stream, `${BASE + 5}-0`);
    const ops = new StreamOperations(redis);
    const c2 = await ops.search(stream, { group: 'g', where: 'pending.consumer == "c2" && pending.deliveries == 1' });
    expect(c2.items.map((h) => [h.id, h.pending?.consumer])).toEqual([
      [`${BASE + 4}-0`, 'c2'],
      [`${BASE + 5}-0`, 'c2'],
      [`${BASE + 6}-0`, 'c2'],
    ]);
    expect(c2.scanned).toBe(7);
    const gone = await ops.search(stream, { group: 'g', where: '!exists(fields.data)' });
    expect(gone.items.map((h) => [h.id, h.fields])).toEqual([[`${BASE + 5}-0`, null]]);
    const paged = await drain(ops, stream, { group: 'g', budgetEntries: 2 });
    expect(paged.ids).toEqual([0, 1, 2, 3, 4, 5, 6].map((i) => `${BASE + i}-0`));
    await expect(ops.search(stream, { group: 'g', newest: true })).rejects.toThrow(/oldest first only .* leave out newest/);
    await expect(ops.search(stream, { group: 'nope' })).rejects.toThrow(`has no consumer group "nope"`);
  });

  it('searches the dead-letter stream by reason, error and the original payload', async () => {
    const stream = unique('search-dlq');
    await redis.xgroup('CREATE', stream, 'g', '$', 'MKSTREAM');
    for (const [i, reason] of [
      [1, 'max-deliveries'],
      [2, 'non-retryable'],
      [3, 'non-retryable'],
    ] as const) {
      const meta = { stream, id: `${BASE + i}-0`, group: 'g', reason, error: `Order A${i} failed`, deliveries: i };
      await redis.xadd(`${stream}:dlq`, '*', ...deadLetterFields(meta, envelope(i, { orderId: `A${i}` })));
    }
    const ops = new StreamOperations(redis);
    const found = await ops.search(stream, {
      deadLetters: true,
      where: 'deadLetter.reason == "non-retryable" && deadLetter.error contains "A3" && payload.orderId == "A3"',
    });
    expect(found.items).toHaveLength(1);
    expect(found.items[0]).toMatchObject({
      stream,
      key: `${stream}:dlq`,
      deadLetter: { reason: 'non-retryable', originalId: `${BASE + 3}-0`, deliveries: 3 },
    });
    expect(found.items[0].fields?.some(([name]) => name.startsWith('dlq:'))).toBe(false);
    expect((await ops.search(stream, { deadLetters: true, newest: true, limit: 1 })).items[0].deadLetter?.originalId).toBe(
      `${BASE + 3}-0`,
    );
  });

  it('merges the partitions of a stream in id order and resumes across them', async () => {
    const stream = unique('search-part');
    for (let p = 0; p < 3; p++) await orders(partitionStream(stream, p), 20, p, 3);
    const ops = new StreamOperations(redis, { streams: [0, 1, 2].map((p) => partitionStream(stream, p)) });
    const all = Array.from({ length: 60 }, (_, i) => `${BASE + i}-0`);
    const oldest = await ops.search(stream, { partitions: 3, limit: 1_000 });
    expect(oldest.items.map((h) => h.id)).toEqual(all);
    expect(oldest.items[4].stream).toBe(partitionStream(stream, 1));
    const paged = await drain(ops, stream, { partitions: 3, newest: true, budgetEntries: 7, where: 'headers.tenant == "t2"' });
    expect(paged.ids).toEqual(all.filter((_, i) => i % 3 === 2).reverse());
    await expect(ops.search(stream, { partitions: 4 })).rejects.toThrow(/:3}" is not one of the configured streams/);
  });

  it('matches what a redactor leaves: a hidden value cannot be found by guessing it', async () => {
    const stream = unique('search-redact');
    await redis.xadd(stream, `${BASE}-0`, ...envelope(0, { card: '4111111111111111', orderId: 'A0' }));
    const ops = new StreamOperations(redis, { streams: [stream] });
    const redact = (fields: Array<[string, string]>) =>
      fields.map(([n, v]): [string, string] => [n, n === 'data' ? v.replace(/"card":"\d+"/, '"card":"****"') : v]);
    expect((await ops.search(stream, { where: 'payload.card startsWith "4111"' })).matched).toBe(1);
    const hidden = await ops.search(stream, { where: 'payload.card startsWith "4111" || fields.data contains "4111"', redact });
    expect(hidden).toMatchObject({ matched: 0, scanned: 1 });
    const shown = await ops.search(stream, { where: 'payload.orderId == "A0"', redact });
    expect(JSON.stringify(shown.items[0].fields)).not.toContain('4111');
  });

  it('refuses bad requests, naming the value and the fix', async () => {
    const stream = unique('search-bad');
    await orders(stream, 3);
    const ops = new StreamOperations(redis, { streams: [stream] });
    const { cursor } = await ops.search(stream, { budgetEntries: 1 });
    const cases: Array<[Parameters<StreamOperations['search']>[1], RegExp]> = [
      [{ since: 'yesterday' }, /since must be a duration before now \(15m, 2h, 7d\), an ISO date .* got "yesterday"/],
      [{ since: BASE + 5, until: BASE + 1 }, /ends \(until .*\) before it starts/],
      [{ where: 'payload.a == ' }, /unexpected end of expression at column 14/],
      [{ limit: 0 }, /limit must be an integer from 1 to 1000, got 0/],
      [{ budgetMs: 60_000 }, /budget ms must be an integer from 1 to 30000/],
      [{ cursor: cursor!, since: '1h' }, /A cursor carries its window and order: leave out since/],
      [{ cursor: 'bm9wZQ' }, /search cursor is not valid .* start the search again without it/],
      [{ cursor: cursor!, group: 'g' }, /This cursor belongs to a search of "stream of .*", not of "pending:g of/],
      [
        {
          cursor: Buffer.from(JSON.stringify({ v: 1, t: `stream of ${stream}`, n: 0, w: ['-', '+'], p: ['1-x'] })).toString(
            'base64url',
          ),
        },
        /A cursor position must be a stream id/,
      ],
      [{ group: 'g', deadLetters: true }, /either a group's pending entries \(group\) or the dead letters, not both/],
    ];
    for (const [request, message] of cases) await expect(ops.search(stream, request)).rejects.toThrow(message);
    await expect(new StreamOperations(redis).search(unique('none'))).rejects.toThrow(/is not one the console serves/);
  });
});
