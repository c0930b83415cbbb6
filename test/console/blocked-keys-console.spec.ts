import type { Browser, Page } from 'playwright-core';
import { seedBlockedKey } from '../support/blocked-keys.js';
import { deadLetterFields, testContext, unique } from '../support/helpers.js';
import { type ConsoleApp, launchConsoleBrowser, q, startConsoleApp } from './console-app.js';

const { redis, closers } = testContext();
jest.setTimeout(60_000);

async function start(...args: Parameters<typeof startConsoleApp>): Promise<ConsoleApp> {
  const started = await startConsoleApp(...args);
  closers.push(() => started.app.close());
  return started;
}

const HOSTILE = '<img src=x onerror="document.title=1">';

/**
 * Group `billing` of a stream: key `customer-7` parked (its entry in the stream, its dead letter in
 * `<stream>:dlq`, 3 entries held), a hostile key failing, and group `audit` with nothing blocked.
 */
async function arrange(): Promise<{ stream: string; entry: string; letter: string }> {
  const stream = unique('blocked-console');
  await redis.xgroup('CREATE', stream, 'billing', '0', 'MKSTREAM');
  await redis.xgroup('CREATE', stream, 'audit', '0');
  const entry = (await redis.xadd(stream, '*', 'data', JSON.stringify({ customer: 'customer-7', amount: -1 }))) as string;
  const meta = { stream, id: entry, group: 'billing', reason: 'non-retryable', error: 'Amount -1 is not positive.' };
  const letter = (await redis.xadd(
    `${stream}:dlq`,
    '*',
    ...deadLetterFields(meta, ['data', '{"customer":"customer-7"}']),
  )) as string;
  const since = Date.now() - 35 * 60_000;
  await seedBlockedKey(redis, {
    stream,
    group: 'billing',
    key: 'customer-7',
    state: 'parked',
    entry,
    deadLetter: letter,
    deadLetterStream: `${stream}:dlq`,
    since,
    held: ['a', 'b', 'c'],
  });
  await seedBlockedKey(redis, { stream, group: 'billing', key: HOSTILE, state: 'failing', entry, since: Date.now() });
  return { stream, entry, letter };
}

describe('blocked keys in the console API (real Redis)', () => {
  it("answers a group's blocked keys oldest first, every group without one, and refuses bad input", async () => {
    const { stream, entry, letter } = await arrange();
    const c = await start({ streams: [stream], auditStream: unique('audit') });

    const { status, body } = await c.get(`blocked-keys?${q({ stream, group: 'billing' })}`);
    expect(status).toBe(200);
    expect(body.items.map((b: { key: string; state: string; waiting: number }) => [b.key, b.state, b.waiting])).toEqual([
      ['customer-7', 'parked', 3],
      [HOSTILE, 'failing', 0],
    ]);
    expect(body.items[0]).toMatchObject({ blockingEntry: entry, deadLetter: letter, deadLetterStream: `${stream}:dlq` });
    expect((await c.get(`blocked-keys?${q({ stream })}`)).body.items).toHaveLength(2);
    expect((await c.get(`blocked-keys?${q({ stream, group: 'audit' })}`)).body.items).toEqual([]);

    const badPartitions = await c.get(`blocked-keys?${q({ stream, partitions: 0 })}`);
    expect([badPartitions.status, badPartitions.body.message]).toEqual([
      400,
      'partitions must be a whole number from 1 to 1024, got "0".',
    ]);
    expect((await c.get(`blocked-keys?${q({ stream: unique('other') })}`)).status).toBe(404);
    expect((await c.get(`blocked-keys?${q({ stream, group: 'nobody' })}`)).status).toBe(404);
  });

  it('passes each ordering key through redact (as the dead letter field nrs:blocked_key), hiding the ones it drops', async () => {
    const { stream, entry } = await arrange();
    const seen: unknown[] = [];
    const redact = (fields: Array<[string, string]>, at: unknown) => {
      seen.push({ fields, at });
      return fields
        .filter(([, value]) => value !== HOSTILE)
        .map(([name, value]): [string, string] => [name, name === 'nrs:blocked_key' ? value.replace(/\d+/g, '#') : value]);
    };
    const c = await start({ streams: [stream], auditStream: unique('audit'), redact });
    const { body } = await c.get(`blocked-keys?${q({ stream, group: 'billing' })}`);
    expect(body.items.map((b: { key: string }) => b.key)).toEqual(['customer-#', '(redacted)']);
    expect(seen[0]).toEqual({ fields: [['nrs:blocked_key', 'customer-7']], at: { stream, group: 'billing', id: entry } });
  });
});

describe('blocked keys in the console page (Chromium, real Redis)', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchConsoleBrowser();
  }, 30_000);
  afterAll(() => browser?.close());

  async function open(c: ConsoleApp, hash: string): Promise<{ page: Page; errors: string[] }> {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    closers.push(() => page.close());
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(`${c.base}${hash}`);
    return { page, errors };
  }

  it('the group page boxes the blocked keys; its page lists them, linking the blocking entry and the dead letter', async () => {
    const { stream, entry, letter } = await arrange();
    const c = await start({ streams: [stream], auditStream: unique('audit') });
    const { page, errors } = await open(c, `#group?${new URLSearchParams({ stream, group: 'billing' })}`);

    await page.waitForSelector('[data-test=blocked-keys-card]');
    const card = (await page.textContent('[data-test=blocked-keys-card]')) ?? '';
    expect(card).toContain('2 keys blocked · 3 entries held');
    expect(card).toMatch(/customer-7\s*parked/);
    expect(card).toContain('35 min');
    // The hostile key is text: no element was made of it, no handler ran.
    expect(card).toContain(HOSTILE);
    expect(await page.locator('[data-test=blocked-keys-card] img').count()).toBe(0);

    await page.click('[data-test=blocked-keys-link]');
    await page.waitForSelector('[data-test=blocked-keys]');
    expect(await page.textContent('[data-test=blocked-summary]')).toMatch(/^2 keys blocked · 3 entries held\./);

    await page.click('[data-test=blocking-dead-letter] >> nth=0');
    await page.waitForSelector('[data-test=entry]');
    const letterText = (await page.textContent('[data-test=entry]')) ?? '';
    expect(letterText).toContain(`Dead letter ${letter}`);
    expect(letterText).toContain('Amount -1 is not positive.');

    await page.goBack();
    await page.waitForSelector('[data-test=blocked-keys]');
    await page.click('[data-test=blocking-entry] >> nth=0');
    await page.waitForSelector('[data-test=entry]');
    expect(await page.textContent('[data-test=entry]')).toContain(entry);
    expect(await page.title()).not.toBe('1');
    expect(errors).toEqual([]);
  });

  it('a group with nothing blocked shows no box, and the page says no key is blocked', async () => {
    const { stream } = await arrange();
    const c = await start({ streams: [stream], auditStream: unique('audit') });
    const { page, errors } = await open(c, `#group?${new URLSearchParams({ stream, group: 'audit' })}`);
    await page.waitForSelector('[data-test=group]');
    expect(await page.locator('[data-test=blocked-keys-card]').count()).toBe(0);
    await page.goto(`${c.base}#blocked?${new URLSearchParams({ stream, group: 'audit' })}`);
    await page.waitForSelector('[data-test=blocked-keys]');
    expect(await page.textContent('[data-test=blocked-summary]')).toBe('No key is blocked.');
    expect(errors).toEqual([]);
  });
});
