import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { testContext, unique, waitFor } from '../support/helpers.js';
import { type ConsoleApp, startConsoleApp } from './console-app.js';

const { redis, closers } = testContext();
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const WEB = join(__dirname, '../../libs/nest-redis-streams/dist/console/web/app.js');
const SAMPLE_MS = 200;

type Point = [number, number, number | null, number, number | null];

/** A stream whose group g gets `steps` more pending entries, one step per sampling period the console records. */
async function growingBacklog(c: ConsoleApp, stream: string, steps: number): Promise<Point[]> {
  let points: Point[] = [];
  for (let step = 1; step <= steps; step++) {
    await redis.xadd(stream, '*', 'n', String(step));
    await redis.xreadgroup('GROUP', 'g', 'c1', 'COUNT', 1, 'STREAMS', stream, '>');
    points = await waitFor(async () => {
      await c.get('overview');
      const { body } = await c.get('history');
      const series = body.groups.find((s: { stream: string; group: string }) => s.stream === stream && s.group === 'g');
      return series?.points.some((p: Point) => p[1] === step) ? (series.points as Point[]) : null;
    }, `a sample with ${step} pending`);
  }
  return points;
}

/** Acknowledges everything pending in g, then waits for a sample that counts `done` entries. */
async function ackAll(c: ConsoleApp, stream: string, done: number): Promise<Point[]> {
  const pending = (await redis.xpending(stream, 'g', '-', '+', 100)) as Array<[string]>;
  await redis.xack(stream, 'g', ...pending.map(([id]) => id));
  return waitFor(async () => {
    await c.get('overview');
    const { body } = await c.get('history');
    const series = body.groups.find((s: { stream: string; group: string }) => s.stream === stream && s.group === 'g');
    return series?.points.some((p: Point) => p[4] === done) ? (series.points as Point[]) : null;
  }, `a sample with ${done} done`);
}

async function start(stream: string, audit: string): Promise<ConsoleApp> {
  const c = await startConsoleApp({ streams: [stream], auditStream: audit, historySampleMs: SAMPLE_MS, refreshMs: 100 });
  closers.push(() => c.app.close());
  return c;
}

describe('console charts: a bounded history in Redis, sparklines and a group chart (real Redis, Chromium)', () => {
  let browser: Browser | undefined;
  afterAll(() => browser?.close());

  it('samples every group once per period into a capped stream that replicas share, and serves it oldest first', async () => {
    const stream = unique('charts');
    const audit = unique('audit');
    await redis.xgroup('CREATE', stream, 'g', '$', 'MKSTREAM');
    const a = await start(stream, audit);
    const points = await growingBacklog(a, stream, 3);
    const pendings = points.map((p) => p[1]);
    expect(pendings).toEqual([...pendings].sort((x, y) => x - y));
    expect(pendings).toEqual(expect.arrayContaining([1, 2, 3]));
    expect(points.every(([at]) => at > 0)).toBe(true);
    // Done (read less pending) stays 0 while nothing is acknowledged, and counts the acks after.
    expect(points.every((p) => p[4] === 0)).toBe(true);
    const after = await ackAll(a, stream, 3);
    expect(after.at(-1)).toEqual([expect.any(Number), 0, 0, 0, 3]);
    // A second replica reads the same history, and adds no second sample for a period already taken.
    const b = await start(stream, audit);
    const fromB = (await b.get('history')).body;
    expect(fromB.sampleMs).toBe(SAMPLE_MS);
    expect(fromB.groups.find((s: { stream: string }) => s.stream === stream).points.length).toBeGreaterThanOrEqual(points.length);
    const ids = (await redis.xrange(`${audit}:history`, '-', '+')).map(([id]) => Number(id.split('-')[0]));
    expect(ids.every((t) => t % SAMPLE_MS === 0)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
  }, 60_000);

  it('caps the history (MAXLEN ~) and refuses a sampling period that is not a positive number', async () => {
    const audit = unique('audit');
    const { GroupHistory } = await import('../../libs/nest-redis-streams/src/console/group-history.js');
    const history = new GroupHistory(redis, `${audit}:history`, 1_000, 10);
    const overview = [{ stream: 's', length: 0, retention: null, deadLetterStream: 's:dlq', readOnly: false, groups: [] }];
    for (let i = 0; i < 500; i++) await history.sample(overview, 1_000 * (i + 1));
    expect(await redis.xlen(`${audit}:history`)).toBeLessThan(150);
    expect(await history.sample(overview, 1_000)).toBe(false);
    expect(() => new GroupHistory(redis, 'k', 0)).toThrow(
      'historySampleMs must be a whole number of milliseconds, 100 or more; got 0.',
    );
  });

  it('draws a sparkline per group on the overview and the pending, lag and dead-letter lines on the group page', async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (or set CHROMIUM_PATH).`);
    if (!existsSync(WEB)) throw new Error(`${WEB} is missing: build the library first (node scripts/build-lib.mjs).`);
    const stream = unique('charts');
    await redis.xgroup('CREATE', stream, 'g', '$', 'MKSTREAM');
    const c = await start(stream, unique('audit'));
    await growingBacklog(c, stream, 3);
    await ackAll(c, stream, 3);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(c.base);
    await page.waitForSelector('[data-test=overview] svg[data-test=spark] polyline');
    const spark = await page.$eval('svg[data-test=spark] polyline.pending', (el) => el.getAttribute('points') ?? '');
    expect(spark.split(' ').length).toBeGreaterThanOrEqual(3);
    // The overview re-renders on its refresh timer: an element read just as it is replaced has no box.
    let box: { width: number; height: number } | null = null;
    await waitFor(
      async () => (box = await page.locator('svg[data-test=spark]').first().boundingBox()) !== null,
      'a sparkline laid out',
    );
    expect(box).toMatchObject({ width: 120, height: 24 });

    await page.goto(`${c.base}#group?${new URLSearchParams({ stream, group: 'g' })}`);
    await page.waitForSelector('svg[data-test=chart] polyline');
    const lines = await page.$$eval('svg[data-test=chart] polyline', (els) =>
      els.map((el) => ({ series: el.getAttribute('data-series'), points: (el.getAttribute('points') ?? '').split(' ').length })),
    );
    expect(lines.map((l) => l.series)).toEqual(['pending', 'lag', 'dead letters']);
    expect(lines.every((l) => l.points >= 3)).toBe(true);
    // Rising pending: a later point of its line is higher on screen (smaller y) than the first.
    const ys = await page.$eval('svg[data-test=chart] polyline.pending', (el) =>
      (el.getAttribute('points') ?? '').split(' ').map((p) => Number(p.split(',')[1])),
    );
    expect(Math.min(...ys)).toBeLessThan(ys[0]);
    // The processed rate, below: the acks show as a rise above 0.
    const rate = await page.$eval('svg[data-test=rate-chart] polyline.processed', (el) =>
      (el.getAttribute('points') ?? '').split(' ').map((p) => Number(p.split(',')[1])),
    );
    expect(Math.min(...rate)).toBeLessThan(Math.max(...rate));
    expect(errors).toEqual([]);
  }, 60_000);

  it('links the Grafana dashboard when configured, and refuses a URL that is not http(s)', async () => {
    const stream = unique('charts');
    await redis.xgroup('CREATE', stream, 'g', '$', 'MKSTREAM');
    const grafanaUrl = 'https://grafana.example.com/d/redis-streams';
    const c = await startConsoleApp({ streams: [stream], auditStream: unique('audit'), grafanaUrl });
    closers.push(() => c.app.close());
    expect((await c.get('session')).body.grafanaUrl).toBe(grafanaUrl);
    const { grafanaLink } = await import('../../libs/nest-redis-streams/src/console/console-http.js');
    expect(() => grafanaLink('javascript:alert(1)')).toThrow(
      'grafanaUrl must be an absolute http(s) URL (the Grafana dashboard), got "javascript:alert(1)".',
    );
    expect(() => grafanaLink('/d/relative')).toThrow('grafanaUrl must be an absolute http(s) URL');
    browser ??= await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    const page = await browser.newPage();
    await page.goto(c.base);
    await page.waitForSelector('[data-test=grafana]');
    expect(await page.getAttribute('[data-test=grafana]', 'href')).toBe(grafanaUrl);
    await page.close();
  }, 60_000);
});
