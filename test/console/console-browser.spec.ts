import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { startRecorder, testContext, unique, waitFor } from '../support/helpers.js';
import { scheduleEntry, summarizeSchedule } from '../../libs/nest-redis-streams/src/schedule/index.js';
import { retryMember, scheduleKeysOf } from '../../libs/nest-redis-streams/src/keys/index.js';
import { type ConsoleApp, launchConsoleBrowser, startConsoleApp } from './console-app.js';

const { redis, closers } = testContext();
// Shots of test streams, for a look after a run; the README's come from the demo (console-demo-browser.spec.ts).
const SHOTS = join(tmpdir(), 'nrs-console-shots');

let browser: Browser;
beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  browser = await launchConsoleBrowser();
}, 30_000);
afterAll(() => browser?.close());

async function open(c: ConsoleApp, hash = ''): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  closers.push(() => page.close());
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(err.message));
  page.on('dialog', (dialog) => void dialog.accept());
  await page.goto(`${c.base}${hash}`);
  return { page, errors };
}

/** A write the page offers no button for, sent from the page itself (same origin, no CSRF token): its status. */
function forgeRedriveAll(page: Page, stream: string): Promise<number> {
  return page.evaluate(async (s) => {
    const res = await fetch(`${location.pathname}/api/dead-letters/redrive-matching`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ stream: s, all: true }),
    });
    return res.status;
  }, stream);
}

/** The demo's shape: an orders stream read by payments, inventory and notifications. */
async function arrange() {
  const stream = unique('orders');
  for (const group of ['payments', 'inventory', 'notifications']) await redis.xgroup('CREATE', stream, group, '0', 'MKSTREAM');
  const hostile = '<img src=x onerror="document.title=1">';
  for (let i = 1; i <= 3; i++)
    await redis.xadd(
      stream,
      '*',
      'orderId',
      `o-${i}`,
      'data',
      JSON.stringify({ orderId: `o-${i}`, amount: 10 * i, items: [{ sku: 'a', quantity: i }] }),
    );
  await redis.xadd(stream, '*', hostile, `${hostile}</script>`);
  await redis.xreadgroup('GROUP', 'inventory', 'pod-1', 'COUNT', 4, 'STREAMS', stream, '>');
  const meta = [
    'dlq:reason',
    'non-retryable',
    'dlq:stream',
    stream,
    'dlq:id',
    '1-1',
    'dlq:group',
    'payments',
    'dlq:consumer',
    'pod-1',
  ];
  meta.push(
    'dlq:error',
    'Order o-17 has a non-positive amount (-1).',
    'dlq:error_class',
    'NonRetryableError',
    'dlq:deliveries',
    '1',
    'dlq:time',
    String(Date.now()),
  );
  const letter = (await redis.xadd(
    `${stream}:dlq`,
    '*',
    ...meta,
    'orderId',
    'o-17',
    'data',
    '{"orderId":"o-17","amount":-1}',
  )) as string;
  await redis.xadd(
    `${stream}:dlq`,
    '*',
    'dlq:reason',
    'trimmed-undelivered',
    'dlq:stream',
    stream,
    'dlq:group',
    'notifications',
    'dlq:lost_count',
    '12',
    'dlq:time',
    String(Date.now()),
  );
  return { stream, letter, hostile };
}

describe('streams console in headless Chromium', () => {
  it('shows the groups, re-drives a dead letter by a click that the handler then processes, and escapes hostile fields', async () => {
    const { stream, letter, hostile } = await arrange();
    // The payments handler, on the real transport: it runs what is re-driven to its group.
    const { seen } = await startRecorder<{ orderId: string }>(closers, stream, {}, { group: 'payments' });
    await waitFor(
      async () => (await redis.xpending(stream, 'payments'))[0] === 0 && seen.length === 4,
      'payments to drain the stream',
    );
    const c = await startConsoleApp({ streams: [stream], auditStream: unique('audit'), guard: () => 'browser' });
    closers.push(() => c.app.close());

    const { page, errors } = await open(c);
    await page.waitForSelector('[data-test=overview] table');
    const overview = await page.textContent('[data-test=overview]');
    for (const group of ['payments', 'inventory', 'notifications']) expect(overview).toContain(group);
    await page.screenshot({ path: join(SHOTS, 'overview.png'), fullPage: true });

    await page.goto(`${c.base}#group?${new URLSearchParams({ stream, group: 'inventory' })}`);
    await page.waitForSelector('[data-test=group] table');
    await page.click('details >> nth=0');
    expect(await page.textContent('[data-test=group]')).toContain(hostile);
    expect(await page.locator('main img').count()).toBe(0);
    expect(await page.title()).toBe('Redis Streams console');
    await page.screenshot({ path: join(SHOTS, 'group.png'), fullPage: true });

    await page.goto(`${c.base}#dead-letters?${new URLSearchParams({ stream })}`);
    await page.waitForSelector('[data-test=redrive]');
    expect(await page.textContent('[data-test=dead-letters]')).toContain('Lost to trimming: 12 entries');
    await page.screenshot({ path: join(SHOTS, 'dead-letters.png'), fullPage: true });
    await page.click('[data-test=redrive]');

    await waitFor(() => seen.some((p) => p.orderId === 'o-17'), 'the payments handler to run the re-driven order');
    expect(await redis.xrange(`${stream}:dlq`, letter, letter)).toEqual([]);
    await waitFor(async () => (await redis.xpending(stream, 'payments'))[0] === 0, 'payments to ack the re-driven entry');
    const [[, fields]] = await redis.xrevrange(stream, '+', '-', 'COUNT', 1);
    expect(fields).toEqual([
      ...['orderId', 'o-17', 'data', '{"orderId":"o-17","amount":-1}', 'nrs:group', 'payments'],
      ...['nrs:redriven_from', letter, 'nrs:original_id', '1-1'],
    ]);
    expect(errors).toEqual([]);
  }, 60_000);

  it("the group page's next page keeps the from/to time range", async () => {
    const stream = unique('paging');
    await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    const base = Date.now() - 60_000;
    // 60 entries one millisecond apart, all pending at c1; the range holds 36 of them (pages of 25).
    for (let i = 0; i < 60; i++) await redis.xadd(stream, `${base + i}-0`, 'n', String(i));
    await redis.xreadgroup('GROUP', 'g', 'c1', 'COUNT', 60, 'STREAMS', stream, '>');
    const c = await startConsoleApp({ streams: [stream], auditStream: unique('audit') });
    closers.push(() => c.app.close());
    const range = { from: String(base + 10), to: String(base + 45) };
    const { page, errors } = await open(c, `#group?${new URLSearchParams({ stream, group: 'g', ...range })}`);
    await page.waitForSelector('[data-test=next-page]');
    const first = await page.textContent('[data-test=group]');
    expect(first).toContain(`${base + 10}-0`);
    expect(first).toContain(`${base + 34}-0`);
    expect(first).not.toContain(`${base + 35}-0`);

    await page.click('[data-test=next-page]');
    await page.waitForFunction((id) => !document.querySelector('[data-test=group]')?.textContent?.includes(id), `${base + 10}-0`);
    const hash = new URLSearchParams(new URL(page.url()).hash.replace(/^#group\?/, ''));
    expect({ from: hash.get('from'), to: hash.get('to'), after: hash.get('after') }).toEqual({
      ...range,
      after: `${base + 34}-0`,
    });
    const second = await page.textContent('[data-test=group]');
    expect(second).toContain(`${base + 35}-0`);
    expect(second).toContain(`${base + 45}-0`);
    // Past the range's end: without the range, the page would run on to the 60th entry.
    expect(second).not.toContain(`${base + 46}-0`);
    expect(await page.locator('[data-test=next-page]').count()).toBe(0);
    expect(errors).toEqual([]);
  }, 60_000);

  it('a viewer the guard refuses writes to sees no action button and why; a forged write is refused and audited', async () => {
    const { stream } = await arrange();
    const audit = unique('audit');
    const guard = (_req: unknown, access: string) => (access === 'read' ? 'viewer' : false);
    const c = await startConsoleApp({ streams: [stream], auditStream: audit, guard });
    closers.push(() => c.app.close());
    const { page, errors } = await open(c, `#group?${new URLSearchParams({ stream, group: 'inventory' })}`);
    await page.waitForSelector('[data-test=group] table');
    expect(await page.textContent('[data-test=read-only-reason]')).toContain('The console guard refuses writes for viewer');
    expect(await page.textContent('#session')).toContain('read-only for viewer');
    expect(await page.locator('main button:not([type=submit])').count()).toBe(0);
    await page.goto(`${c.base}#dead-letters?${new URLSearchParams({ stream })}`);
    await page.waitForSelector('[data-test=dead-letters] table');
    expect(await page.locator('[data-test=redrive]').count()).toBe(0);
    expect(await page.locator('main button:not([type=submit])').count()).toBe(0);
    const status = await forgeRedriveAll(page, stream);
    expect(status).toBe(403);
    const [[, refusal]] = await redis.xrevrange(`${audit}:refused`, '+', '-', 'COUNT', 1);
    expect(refusal).toEqual(expect.arrayContaining(['action', 'dlq.redrive-matching', 'stream', stream, 'state', 'refused']));
    expect(await redis.xlen(`${stream}:dlq`)).toBe(2);
    expect(errors).toEqual([]);
  }, 60_000);

  it('read-only mode shows no action buttons and the API refuses writes', async () => {
    const { stream } = await arrange();
    const c = await startConsoleApp({ streams: [stream], auditStream: unique('audit'), guard: () => true, readOnly: true });
    closers.push(() => c.app.close());
    const { page } = await open(c, `#dead-letters?${new URLSearchParams({ stream })}`);
    await page.waitForSelector('[data-test=dead-letters] table');
    expect(await page.textContent('#session')).toContain('read-only');
    expect(await page.locator('main button:not([type=submit])').count()).toBe(0);
    await page.goto(`${c.base}#group?${new URLSearchParams({ stream, group: 'inventory' })}`);
    await page.waitForSelector('[data-test=group] table');
    expect(await page.locator('[data-test=ack]').count()).toBe(0);
    const status = await forgeRedriveAll(page, stream);
    expect(status).toBe(405);
    expect(await redis.xlen(`${stream}:dlq`)).toBe(2);
  }, 60_000);

  it('the schedule page (from the overview) shows the scheduled entries, an overdue one standing out, with redacted payloads, and cancels one', async () => {
    const stream = unique('sched-console');
    await redis.xgroup('CREATE', stream, 'billing', '$', 'MKSTREAM');
    const envelope = (id: string) => ['v', 'nrs/1', 'event_id', id, 'data', JSON.stringify({ card: '4111', id })];
    await scheduleEntry(redis, stream, 'late-1', Date.now() - 4_000, '', ['*'], envelope('late-1'));
    await scheduleEntry(redis, stream, 'ahead-1', Date.now() + 600_000, '', ['*'], envelope('ahead-1'));
    const audit = unique('audit');
    const c = await startConsoleApp({
      streams: [stream],
      auditStream: audit,
      guard: () => 'browser',
      redact: (fields) => fields.map(([n, v]) => [n, n === 'data' ? '[redacted]' : v]),
    });
    closers.push(() => c.app.close());
    const { page, errors } = await open(c);

    await page.click('[data-test=scheduled-link]');
    await page.waitForSelector('[data-test=scheduled]');
    const summary = (await page.textContent('[data-test=schedule-summary]')) ?? '';
    expect(summary).toMatch(/^2 scheduled; next due .*Oldest overdue by \d+(\.\d+)? ?s/);
    const text = (await page.textContent('[data-test=scheduled]')) ?? '';
    expect(text).toContain('late-1');
    expect(text).toContain('ahead-1');
    expect(text).toMatch(/overdue/);
    expect(text).not.toContain('4111');

    await page.click('[data-test=cancel-scheduled] >> nth=1');
    await waitFor(async () => (await summarizeSchedule(redis, stream)).count === 1, 'the cancel to reach Redis');
    expect((await summarizeSchedule(redis, stream)).entries.map((e) => e.eventId)).toEqual(['late-1']);
    const records = await redis.xrevrange(audit, '+', '-', 'COUNT', 5);
    expect(records.map(([, f]) => f.join(' ')).join('\n')).toMatch(/schedule\.cancel[\s\S]*ahead-1/);
    expect(errors).toEqual([]);
  }, 60_000);

  it("the schedule page names each entry's member and group, lists malformed records and records set aside, and cancels one by member", async () => {
    const stream = unique('sched-console-members');
    await redis.xgroup('CREATE', stream, 'billing', '$', 'MKSTREAM');
    const { due, entries } = scheduleKeysOf(stream);
    const copy = retryMember('1-0', 'billing');
    await scheduleEntry(
      redis,
      stream,
      copy,
      Date.now() + 600_000,
      '',
      ['*'],
      ['v', 'nrs/1', 'data', '{}', 'nrs:group', 'billing'],
    );
    await redis.zadd(due, Date.now() + 600_000, 'hand-written');
    await redis.hset(entries, 'hand-written', 'garbage');
    await redis.zadd(due, '+inf', 'set-aside-1');
    const c = await startConsoleApp({ streams: [stream], auditStream: unique('audit'), guard: () => 'browser' });
    closers.push(() => c.app.close());
    const { page, errors } = await open(c);

    await page.goto(`${c.base}#scheduled?stream=${encodeURIComponent(stream)}`);
    await page.waitForSelector('[data-test=schedule-set-aside]');
    const text = (await page.textContent('[data-test=scheduled]')) ?? '';
    expect(text).toContain(copy);
    expect(text).toContain('billing');
    expect(text).toMatch(/hand-written.*never \(malformed\).*not an entry this library packed/);
    expect(await page.textContent('[data-test=schedule-set-aside]')).toMatch(
      /Set aside: 1 malformed.*set-aside-1.*no entry is stored/,
    );

    await page.click('[data-test=schedule-set-aside] [data-test=cancel-scheduled]');
    await waitFor(async () => (await redis.zscore(due, 'set-aside-1')) === null, 'the cancel to reach Redis');
    expect((await summarizeSchedule(redis, stream)).count).toBe(2);
    expect(errors).toEqual([]);
  }, 60_000);
});
