import type { Browser, Page } from 'playwright-core';
import { Controller } from '@nestjs/common';
import { EventPattern } from '@nestjs/microservices';
import { NonRetryableError, StreamOperations } from 'nest-redis-streams';
import { startMicroservice, startRecorder, testContext, unique, waitFor } from '../support/helpers.js';
import { type ConsoleApp, launchConsoleBrowser, q, startConsoleApp } from './console-app.js';

const { redis, closers } = testContext();

let browser: Browser;
beforeAll(async () => {
  browser = await launchConsoleBrowser();
}, 30_000);
afterAll(() => browser?.close());

async function park(stream: string, errorClass: string, error: string, customer: string): Promise<string> {
  const meta = ['dlq:reason', 'max-deliveries', 'dlq:stream', stream, 'dlq:id', '1-1', 'dlq:group', 'g', 'dlq:consumer', 'c1'];
  meta.push('dlq:error', error, 'dlq:error_class', errorClass, 'dlq:deliveries', '5', 'dlq:time', String(Date.now()));
  return (await redis.xadd(`${stream}:dlq`, '*', ...meta, 'data', JSON.stringify({ customer }))) as string;
}

/** A writable console on `stream` and a page on its dead letters; dialogs are accepted. */
async function openDeadLetters(stream: string): Promise<{ page: Page; errors: string[]; c: ConsoleApp }> {
  const c = await startConsoleApp({ streams: [stream], auditStream: unique('audit'), guard: () => 'browser' });
  closers.push(() => c.app.close());
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  closers.push(() => page.close());
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(err.message));
  page.on('dialog', (dialog) => void dialog.accept());
  await page.goto(`${c.base}#dead-letters?${new URLSearchParams({ stream })}`);
  return { page, errors, c };
}

describe('console dead-letter page in headless Chromium: failure groups', () => {
  it('opens on the failure groups, drills down to one, dry-runs it and re-drives it by a click', async () => {
    const stream = unique('browser-groups');
    await redis.xgroup('CREATE', stream, 'g', '$', 'MKSTREAM');
    for (const n of [1, 2, 3]) await park(stream, 'PaymentError', `Card ${n} declined for "<b>o-${n}</b>"`, `cus-${n % 2}`);
    const other = await park(stream, 'TypeError', 'sku is undefined', 'cus-9');
    const { page, errors } = await openDeadLetters(stream);
    await page.waitForSelector('[data-test=failure-groups] table');
    const groups = await page.textContent('[data-test=failure-groups]');
    expect(groups).toContain('2 groups. All 4 records read.');
    expect(groups).toMatch(/PaymentError\s*Card <n> declined for <q>/);
    expect(await page.locator('main b').count()).toBe(0);

    await page.click('[data-test=group-entries] >> nth=0');
    await page.waitForSelector('[data-test=cause-filter]');
    await waitFor(
      async () => (await page.locator('[data-test=dead-letters] [data-test=redrive]').count()) === 3,
      'the 3 records of the group',
    );
    expect(await page.textContent('[data-test=dead-letters]')).not.toContain(other);

    await page.fill('input[name=key]', 'customer');
    await page.click('[data-test=dry-run] >> nth=0');
    await page.waitForSelector('[data-test=preview-count]');
    const preview = await page.textContent('[data-test=redrive-preview]');
    expect(preview).toContain('Would re-drive 3 dead letters (oldest first); 0 tombstones stay.');
    expect(preview).toContain('Keys (customer): 2 distinct, 0 without it; most: cus-1 2, cus-0 1.');
    expect(await redis.xlen(stream)).toBe(0);

    await page.click('[data-test=redrive-group]');
    await waitFor(async () => (await redis.xlen(stream)) === 3, 'the group to be re-driven');
    await waitFor(async () => (await page.textContent('#notice'))?.includes('done'), 'the notice of the re-drive');
    expect(await redis.xlen(`${stream}:dlq`)).toBe(1);
    expect(errors).toEqual([]);
  }, 60_000);

  it('starts a canary re-drive from the dry run and shows its progress until it is done', async () => {
    const stream = unique('browser-canary');
    await redis.xgroup('CREATE', stream, 'g', '$', 'MKSTREAM');
    for (const n of [1, 2, 3, 4]) await park(stream, 'PaymentError', `Card ${n} declined`, `cus-${n}`);
    const { seen } = await startRecorder(closers, stream, { group: 'g', consumer: 'c1' });
    const { page, errors } = await openDeadLetters(stream);
    await page.click('[data-test=dry-run]');
    await page.fill('input[name=canary]', '2');
    await page.click('[data-test=canary-start]');
    await page.waitForSelector('[data-test=canary-state]');
    await waitFor(
      async () => (await page.textContent('[data-test=canary-state]'))?.startsWith('done'),
      'the canary run to be done',
      30_000,
    );
    expect(await page.textContent('[data-test=canary-counts]')).toContain(
      '4 re-driven, 4 succeeded, 0 failed again, 0 watching.',
    );
    expect(await page.textContent('[data-test=canary-reason]')).toBe('All 4 re-driven; 4 succeeded, 0 failed again.');
    expect(seen).toHaveLength(4);
    expect(errors).toEqual([]);
  }, 60_000);

  it("shows a dead letter's history from its row: first id, parked, re-driven, parked again", async () => {
    const stream = unique('browser-history');
    await redis.xgroup('CREATE', stream, 'g', '$', 'MKSTREAM');
    @Controller()
    class AlwaysFails {
      @EventPattern(stream)
      handle() {
        throw new NonRetryableError('Still declined.');
      }
    }
    const { app } = await startMicroservice([AlwaysFails], { group: 'g', consumer: 'c1' });
    closers.push(() => app.close());
    const ops = new StreamOperations(redis, { streams: [stream] });
    const first = (await redis.xadd(stream, '*', 'v', 'nrs/1', 'data', '{}')) as string;
    await waitFor(async () => (await redis.xlen(`${stream}:dlq`)) === 1, 'the first park');
    const { newId } = await ops.redrive('tester', stream, (await ops.listDeadLetters(stream)).items[0].id);
    await waitFor(async () => (await ops.listDeadLetters(stream)).items[0]?.originalId === newId, 'the second park');

    const { page, errors, c } = await openDeadLetters(stream);
    await page.click('[data-test=history-link]');
    await page.waitForSelector('[data-test=history] table');
    const text = await page.textContent('[data-test=history]');
    expect(text).toContain(`History of ${newId}`);
    expect(text).toContain(`first added to ${stream}`);
    expect(text).toMatch(/re-driven to .* for group g/);
    expect(text).toMatch(/parked again as .*NonRetryableError: Still declined\./);
    expect(text!.indexOf(first)).toBeLessThan(text!.indexOf('parked again'));
    const bad = await c.get(`entry-history?${q({ stream, id: 'yesterday' })}`);
    expect(bad.status).toBe(400);
    expect(errors).toEqual([]);
  }, 60_000);
});
