import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { startConsoleApp } from '../console/console-app.js';
import { testContext, unique, waitFor } from '../support/helpers.js';
import { scheduleEntry, summarizeSchedule } from '../../libs/nest-redis-streams/src/schedule/index.js';

// The console's schedule page: reached from the overview, it shows what waits (count, next due,
// oldest overdue, the entries with their payload, redacted) and cancels one under the audit.
const { redis, closers } = testContext();
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const WEB = join(__dirname, '../../libs/nest-redis-streams/dist/console/web/app.js');

let browser: Browser;
beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (or set CHROMIUM_PATH).`);
  if (!existsSync(WEB)) throw new Error(`${WEB} is missing: build the library first (node scripts/build-lib.mjs, or npm test).`);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
}, 30_000);
afterAll(() => browser?.close());

describe("the console's schedule page", () => {
  it('shows the scheduled entries, an overdue one standing out, with redacted payloads, and cancels one', async () => {
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
    const page = await browser.newPage();
    closers.push(() => page.close());
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    page.on('dialog', (dialog) => void dialog.accept());
    await page.goto(c.base);

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
});
