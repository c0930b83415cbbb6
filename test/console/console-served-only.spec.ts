import { testContext, unique, waitFor } from '../support/helpers.js';
import { type ConsoleApp, q, startConsoleApp } from './console-app.js';

const { redis, closers } = testContext();
jest.setTimeout(60_000);
const SAMPLE_MS = 200;

async function start(streams: string[], audit: string): Promise<ConsoleApp> {
  const c = await startConsoleApp({
    streams,
    auditStream: audit,
    historySampleMs: SAMPLE_MS,
    refreshMs: 100,
    guard: () => 'ops',
  });
  closers.push(() => c.app.close());
  return c;
}

/** A stream with group g, one pending entry and one dead letter; returns the letter's id. */
async function arrange(stream: string): Promise<string> {
  await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
  const id = (await redis.xadd(stream, '*', 'n', '1')) as string;
  await redis.xreadgroup('GROUP', 'g', 'c1', 'STREAMS', stream, '>');
  const meta = ['dlq:reason', 'non-retryable', 'dlq:stream', stream, 'dlq:id', id, 'dlq:group', 'g', 'dlq:error', 'boom'];
  return (await redis.xadd(`${stream}:dlq`, '*', ...meta, 'n', '1')) as string;
}

const streamsOf = (series: Array<{ stream: string }>) => [...new Set(series.map((s) => s.stream))].sort();

describe('a console answers only for the streams it serves, though apps share its audit stream (real Redis)', () => {
  it('charts, audit and canary runs of another app on the same audit stream stay out of every answer', async () => {
    const [orders, payroll, audit] = [unique('orders'), unique('payroll'), unique('audit')];
    const [ordersLetter, payrollLetter] = [await arrange(orders), await arrange(payroll)];
    const a = await start([orders], audit);
    const b = await start([payroll], audit);
    expect((await a.get(`entries?${q({ stream: payroll })}`)).status).toBe(404);

    // Both consoles are watched: each samples its groups into the shared history key, in every period.
    const sampled = async (c: ConsoleApp, stream: string, periods: number) =>
      waitFor(async () => {
        await c.get('overview');
        const { body } = await c.get('history');
        const series = body.groups.find((s: { stream: string }) => s.stream === stream);
        return series?.points.length >= periods ? body : null;
      }, `${periods} samples of ${stream}`);
    const [fromA, fromB] = await Promise.all([sampled(a, orders, 3), sampled(b, payroll, 3)]);
    expect(streamsOf(fromA.groups)).toEqual([orders]);
    expect(streamsOf(fromB.groups)).toEqual([payroll]);
    // The key holds both apps' groups: each console filtered, neither lost the periods the other took.
    const stored = await redis.xrange(`${audit}:history`, '-', '+');
    expect(stored.some(([, f]) => f[f.indexOf('groups') + 1].includes(orders))).toBe(true);
    expect(stored.some(([, f]) => f[f.indexOf('groups') + 1].includes(payroll))).toBe(true);
    for (const body of [fromA, fromB]) {
      const [{ points }] = body.groups;
      const periods = points.map(([at]: [number]) => Math.floor(at / SAMPLE_MS));
      expect(new Set(periods).size).toBe(periods.length);
    }

    // The audit: each console's writes are recorded in the one stream, each console shows its own.
    expect((await a.post('dead-letters/discard', { stream: orders, id: ordersLetter })).status).toBe(200);
    expect((await b.post('dead-letters/discard', { stream: payroll, id: payrollLetter })).status).toBe(200);
    expect(await redis.xlen(audit)).toBe(2);
    expect((await a.get('audit')).body.items.map((r: { stream: string }) => r.stream)).toEqual([orders]);
    expect((await b.get('audit')).body.items.map((r: { stream: string }) => r.stream)).toEqual([payroll]);
    const paged = (await a.get(`audit?${q({ count: 1 })}`)).body;
    expect(paged.items.map((r: { stream: string }) => r.stream)).toEqual([orders]);

    // A canary run kept beside the shared audit stream: served by the console of its stream only.
    const runId = 'run-of-payroll';
    const progress = { runId, stream: payroll, cause: '0123456789ab', state: 'done', updatedAt: Date.now() };
    await redis.hset(`${audit}:canary:${runId}`, 'progress', JSON.stringify(progress));
    expect((await b.get(`dead-letters/canary?${q({ run: runId })}`)).body).toMatchObject({ runId, stream: payroll });
    const refused = await a.get(`dead-letters/canary?${q({ run: runId })}`);
    expect(refused.status).toBe(404);
    expect(refused.body.message).toContain(`There is no canary re-drive run "${runId}"`);
  });
});
