import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Controller } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { type Browser, chromium } from 'playwright-core';
import { startMicroservice, testContext, unique, waitFor } from '../support/helpers.js';
import { q, startConsoleApp } from './console-app.js';

const { redis, closers } = testContext();
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const WEB = join(__dirname, '../../libs/nest-redis-streams/dist/console/web/app.js');

/** A payments handler that declines every order (other entries pass): its entries stay pending, retried after a long back-off. */
function decliner(stream: string) {
  @Controller()
  class Decliner {
    @EventPattern(stream, { group: 'payments', maxDeliveries: 50 })
    handle(@Payload() data: { orderId?: string }) {
      if (data.orderId) throw new TypeError(`Card declined for ${data.orderId}`);
    }
  }
  return Decliner;
}

/** An orders stream: payments fails on every entry, `audit-trail` has 311 entries to read and no consumer. */
async function arrange() {
  const stream = unique('since');
  await redis.xgroup('CREATE', stream, 'payments', '0', 'MKSTREAM');
  const publishedAt = Date.now() - 5_000;
  const id = (await redis.xadd(
    stream,
    '*',
    'v',
    'nrs/1',
    'event_id',
    'e-1',
    'data',
    '{"orderId":"o-1"}',
    'published_at',
    String(publishedAt),
  )) as string;
  await redis.xgroup('CREATE', stream, 'audit-trail', '0');
  const pipeline = redis.pipeline();
  for (let i = 0; i < 310; i++) pipeline.xadd(stream, '*', 'n', String(i));
  await pipeline.exec();
  const instance = await startMicroservice([decliner(stream)], { consumer: 'pay-1', retryBackoffMs: 60_000 });
  closers.push(() => instance.app.close());
  return { stream, id, publishedAt };
}

describe('since when and why: absolute times, last handler error, the group page (real handler, real Redis)', () => {
  let browser: Browser | undefined;
  afterAll(() => browser?.close());

  it('a pending entry carries its added, published and last-delivery times and the handler error that keeps it there', async () => {
    const { stream, id, publishedAt } = await arrange();
    const c = await startConsoleApp({ streams: [stream], auditStream: unique('audit') });
    closers.push(() => c.app.close());
    const before = Date.now();
    const entry = await waitFor(async () => {
      const { body } = await c.get(`pending?${q({ stream, group: 'payments', count: 1 })}`);
      return body.items[0]?.lastError ? body.items[0] : null;
    }, 'the failure to be recorded');
    expect(entry).toMatchObject({ id, time: Number(id.split('-')[0]), publishedAt, consumer: 'pay-1', deliveries: 1 });
    expect(entry.lastError).toMatchObject({ consumer: 'pay-1', deliveries: 1, errorClass: 'TypeError' });
    expect(entry.lastError.message).toBe('Card declined for o-1');
    expect(entry.lastDeliveryAt).toBeLessThanOrEqual(Date.now());
    expect(entry.lastDeliveryAt).toBeGreaterThan(before - 60_000);
    // Bounded: a capped stream beside the consumed one, expiring.
    const key = `{${stream}}:nrs-errors:payments`;
    expect(await redis.pttl(key)).toBeGreaterThan(0);
    expect(await redis.xlen(key)).toBe(1);
  }, 60_000);

  it('the page shows the group figures and badges, problem groups first and highlighted, times absolute, ids on one line', async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (or set CHROMIUM_PATH).`);
    if (!existsSync(WEB)) throw new Error(`${WEB} is missing: build the library first (node scripts/build-lib.mjs).`);
    const { stream, id } = await arrange();
    await redis.xgroup('CREATE', stream, 'all-good', '$');
    await redis.xgroup('CREATECONSUMER', stream, 'all-good', 'reader-1');
    const c = await startConsoleApp({ streams: [stream], auditStream: unique('audit') });
    closers.push(() => c.app.close());
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));

    await page.goto(c.base);
    await page.waitForSelector('[data-test=overview] table');
    const rows = await page.$$eval('[data-test=overview] tbody tr', (trs) =>
      trs.map((tr) => ({ group: tr.querySelector('td')?.textContent, problem: tr.classList.contains('problem') })),
    );
    expect(rows[0]).toEqual({ group: 'audit-trail', problem: true });
    expect(rows.find((r) => r.group === 'all-good')).toEqual({ group: 'all-good', problem: false });

    await page.goto(`${c.base}#group?${new URLSearchParams({ stream, group: 'audit-trail' })}`);
    await page.waitForSelector('[data-test=group-figures]');
    const figures = await page.textContent('[data-test=group-figures]');
    expect(figures).toContain('311lag');
    expect(figures).toContain('0consumers');
    expect(figures).toContain('no consumers');

    await page.goto(`${c.base}#group?${new URLSearchParams({ stream, group: 'payments' })}`);
    await page.waitForFunction(() => document.querySelector('[data-test=group]')?.textContent?.includes('Card declined'));
    const text = (await page.textContent('[data-test=group]')) ?? '';
    const added = `${new Date(Number(id.split('-')[0])).toISOString().slice(0, 19).replace('T', ' ')}Z`;
    expect(text).toContain(added);
    expect(text).toContain('TypeError: Card declined for o-1');
    const idCell = page.locator('[data-test=group] .ident', { hasText: id }).first();
    expect(await idCell.evaluate((el) => getComputedStyle(el).whiteSpace)).toBe('nowrap');
    expect(errors).toEqual([]);
  }, 60_000);
});
