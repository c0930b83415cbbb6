import type { RedisStreamsConsoleOptions } from 'nest-redis-streams/console';
import { deadLetterFields, testContext, unique } from '../support/helpers.js';
import { type ConsoleApp, launchConsoleBrowser, q, startConsoleApp } from './console-app.js';

const { redis, closers } = testContext();
// A browser and a Nest app per test; on 2 busy cores a page load can take seconds.
jest.setTimeout(60_000);

/** Masks the card number inside `data`, as a team would: the console never shows (or matches) it. */
const mask: RedisStreamsConsoleOptions['redact'] = (fields) =>
  fields.map(([n, v]) => [n, n === 'data' ? v.replace(/"card":"\d+"/, '"card":"****"') : v]);

async function start(options: RedisStreamsConsoleOptions): Promise<ConsoleApp> {
  const c = await startConsoleApp(options);
  closers.push(() => c.app.close());
  return c;
}

/** Orders o-1..o-6 (the card of o-4 is 4111…), group g with o-1..o-3 pending at pod-1, one dead letter of o-5. */
async function arrange(): Promise<string> {
  const stream = unique('console-search');
  await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
  for (let i = 1; i <= 6; i++) {
    const order = { orderId: `o-${i}`, amount: 10 * i, card: i === 4 ? '4111111111111111' : '5500000000000004' };
    await redis.xadd(
      stream,
      '*',
      'v',
      'nrs/1',
      'event_id',
      `e-${i}`,
      'data',
      JSON.stringify(order),
      'headers',
      '{"tenant":"acme"}',
    );
  }
  await redis.xreadgroup('GROUP', 'g', 'pod-1', 'COUNT', 3, 'STREAMS', stream, '>');
  const meta = { stream, id: '1-1', group: 'g', reason: 'non-retryable', error: 'Card declined for o-5' };
  await redis.xadd(`${stream}:dlq`, '*', ...deadLetterFields(meta, ['data', '{"orderId":"o-5","card":"4111111111111111"}']));
  return stream;
}

describe('console search (API and page, real Redis)', () => {
  it('answers over HTTP with redacted results, never matching a redacted value, on a read-only stream too', async () => {
    const stream = await arrange();
    const c = await start({ streams: [{ stream, readOnly: true }], redact: mask });
    const found = await c.get(
      `search?${q({ stream, where: 'payload.amount >= 40 && headers.tenant == "acme"', newest: 'true' })}`,
    );
    expect(found.status).toBe(200);
    expect(found.body).toMatchObject({ matched: 3, scanned: 6, exhausted: true, cursor: null });
    expect(found.body.items.map((h: { fields: string[][] }) => JSON.parse(h.fields[2][1]).orderId)).toEqual([
      'o-6',
      'o-5',
      'o-4',
    ]);
    expect(JSON.stringify(found.body)).not.toContain('4111');
    // Guessing the hidden card finds nothing, in the stream and in the dead letters.
    for (const where of ['payload.card startsWith "4111"', 'fields.data contains "4111"']) {
      expect((await c.get(`search?${q({ stream, where })}`)).body).toMatchObject({ matched: 0, scanned: 6 });
      expect((await c.get(`search?${q({ stream, where, deadLetters: 'true' })}`)).body).toMatchObject({ matched: 0, scanned: 1 });
    }
    const pel = await c.get(`search?${q({ stream, group: 'g', where: 'pending.consumer == "pod-1"', budgetEntries: 2 })}`);
    expect(pel.body).toMatchObject({ matched: 2, scanned: 2, stoppedBy: 'entries', exhausted: false });
    const rest = await c.get(
      `search?${q({ stream, group: 'g', where: 'pending.consumer == "pod-1"', cursor: pel.body.cursor })}`,
    );
    expect(rest.body).toMatchObject({ matched: 1, exhausted: true });
    const bad = await c.get(`search?${q({ stream, where: 'payload.amount > 1)' })}`);
    expect(bad).toMatchObject({ status: 400, body: { message: "Search expression: unexpected ')' at column 19." } });
    expect((await c.get(`search?${q({ stream, limit: 'lots' })}`)).body.message).toBe(
      'limit must be an integer from 1 to 1000, got "lots".',
    );
    expect((await c.get(`search?${q({ stream: unique('other') })}`)).status).toBe(404);
    // A stream entry's id is no dead letter. (Ids are times, so the dead letter added in the same
    // millisecond as an order shares its id: ask with one it does not share.)
    const letterIds = new Set((await redis.xrange(`${stream}:dlq`, '-', '+')).map(([id]) => id));
    const notALetter = found.body.items.map((h: { id: string }) => h.id).find((id: string) => !letterIds.has(id));
    const letter = await c.get(`dead-letter?${q({ stream, id: notALetter })}`);
    expect(letter).toMatchObject({ status: 200, body: { letter: null } });
  });

  it('has a search box on the group and dead-letter pages whose results open the entry view', async () => {
    const stream = await arrange();
    const c = await start({ streams: [stream], redact: mask });
    const browser = await launchConsoleBrowser();
    closers.push(() => browser.close());
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));

    // The overview links each stream to its own search page.
    await page.goto(c.base);
    await page.locator('[data-test=stream-search-link]').first().click();
    const streamBox = page.locator('[data-test=stream-search] [data-test=search]');
    await streamBox.locator('input[name=where]').fill('payload.amount == 30 || payload.orderId == "o-6"');
    await streamBox.locator('[data-test=search-submit]').click();
    await page.locator('[data-test=search-summary]').filter({ hasText: '2 matched, 6 entries looked at' }).waitFor();

    await page.goto(`${c.base}#group?${q({ stream, group: 'g' })}`);
    // The stream page's own search box stays until the group page has rendered: wait for the group
    // page (its figures) before typing, or a busy machine types into the page being replaced.
    await page.locator('[data-test=group-figures]').waitFor();
    const box = page.locator('[data-test=search]');
    await box.locator('input[name=where]').fill('payload.amount > 10 && pending.deliveries == 1');
    await box.locator('[data-test=search-submit]').click();
    await page.locator('[data-test=search-summary]').filter({ hasText: '2 matched, 3 entries looked at' }).waitFor();
    expect(await box.locator('[data-test=search-hit]').count()).toBe(2);

    await box.locator('select[name=source]').selectOption('stream');
    await box.locator('input[name=where]').fill('headers.tenant == "acme"');
    await box.locator('input[name=since]').fill('1h');
    await box.locator('input[name=newest]').check();
    await box.locator('input[name=limit]').fill('2');
    await box.locator('[data-test=search-submit]').click();
    await page.locator('[data-test=search-summary]').filter({ hasText: 'stopped by the result limit' }).waitFor();
    for (const shown of [4, 6]) {
      await box.locator('[data-test=search-more]').last().click();
      await page.waitForFunction((n) => document.querySelectorAll('[data-test=search-hit]').length === n, shown);
    }
    const ids = await box.locator('[data-test=search-hit]').allTextContents();
    expect(ids).toEqual([...(await redis.xrevrange(stream, '+', '-')).map(([id]) => id)]);
    await box.locator('input[name=newest]').uncheck();
    await box.locator('input[name=limit]').fill('50');

    await box.locator('input[name=where]').fill('payload.orderId == "o-4"');
    await box.locator('[data-test=search-submit]').click();
    await page.locator('[data-test=search-summary]').filter({ hasText: '1 matched, 6 entries looked at' }).waitFor();
    await box.locator('[data-test=search-hit]').click();
    const entry = page.locator('[data-test=entry]');
    await entry.filter({ hasText: 'not pending in g' }).waitFor();
    expect(await entry.textContent()).toContain('"****"');
    expect(await entry.textContent()).not.toContain('4111');

    await page.goto(`${c.base}#dead-letters?${q({ stream })}`);
    const dlqBox = page.locator('[data-test=search]');
    await dlqBox.locator('input[name=where]').fill('deadLetter.error contains "declined"');
    await dlqBox.locator('[data-test=search-submit]').click();
    await page.locator('[data-test=search-summary]').filter({ hasText: '1 matched' }).waitFor();
    await dlqBox.locator('[data-test=search-hit]').click();
    await page.locator('[data-test=entry]').filter({ hasText: 'non-retryable in group g' }).waitFor();

    // A bad condition is reported with its column, the page keeps working.
    await page.goto(`${c.base}#dead-letters?${q({ stream })}`);
    await page.locator('[data-test=search] input[name=where]').fill('deadLetter.error ==');
    await page.locator('[data-test=search-submit]').click();
    await page.locator('#notice.error').filter({ hasText: 'unexpected end of expression at column 20' }).waitFor();
    expect(errors).toEqual([]);
  });
});
