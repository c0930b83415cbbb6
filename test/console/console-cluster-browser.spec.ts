import type { Browser, Page } from 'playwright-core';
import { Cluster } from 'ioredis';
import { defaultDeadLetterStream } from '../../libs/nest-redis-streams/src/keys/index.js';
import { scheduleEntry } from '../../libs/nest-redis-streams/src/schedule/index.js';
import { seedBlockedKey } from '../support/blocked-keys.js';
import { unique } from '../support/helpers.js';
import { type ConsoleApp, launchConsoleBrowser, q, startConsoleApp } from './console-app.js';
import { masterPortOf } from '../support/cluster-masters.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startCluster } = require('../../scripts/lib/redis-cluster.cjs');

// A cluster start, a browser and an app per test: seconds each on two busy cores.
jest.setTimeout(120_000);

/**
 * Issue 28's four views in a real browser against a Redis Cluster of 3 masters: each stream on a
 * master of its own, so every page reads the slot of its stream (and of the keys beside it: the
 * dead-letter stream, the schedule, the blocked keys) on the right node.
 */
describe('console on a 3-master Redis Cluster, in headless Chromium', () => {
  let cluster: { startupNodes: Array<{ host: string; port: number }>; stop(): Promise<void> };
  let redis: Cluster;
  let browser: Browser;
  const closers: Array<() => Promise<unknown>> = [];

  beforeAll(async () => {
    cluster = await startCluster({ masters: 3, replicas: 0 });
    redis = new Cluster(cluster.startupNodes);
    if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
    browser = await launchConsoleBrowser();
  }, 120_000);
  afterAll(async () => {
    while (closers.length) await closers.pop()!();
    await browser?.close();
    redis?.disconnect();
    await cluster?.stop();
  });

  const masterOf = (key: string) => masterPortOf(redis, key);

  /** Three stream names, one on each master, each with group `g`. */
  async function streamsOnEveryMaster(): Promise<[string, string, string]> {
    const byMaster = new Map<number, string>();
    for (let n = 0; byMaster.size < 3; n++) {
      const candidate = unique(`console-cl-${n}`);
      const master = await masterOf(candidate);
      if (!byMaster.has(master)) byMaster.set(master, candidate);
    }
    const streams = [...byMaster.values()] as [string, string, string];
    for (const stream of streams) await redis.xgroup('CREATE', stream, 'g', '$', 'MKSTREAM');
    return streams;
  }

  const envelope = (data: object, eventId: string) => ['v', 'nrs/1', 'event_id', eventId, 'data', JSON.stringify(data)];

  async function open(c: ConsoleApp, hash: string): Promise<{ page: Page; errors: string[] }> {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    closers.push(() => page.close());
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(`${c.base}${hash}`);
    return { page, errors };
  }

  it('searches a stream, groups dead letters by cause, lists the schedule and the blocked keys, each on its own master', async () => {
    const [orders, payments, reminders] = await streamsOnEveryMaster();
    // Search: five orders, two over 20.
    const ids: string[] = [];
    for (const amount of [5, 10, 25, 30, 15]) ids.push((await redis.xadd(orders, '*', ...envelope({ amount }, `o-${amount}`)))!);
    // Failure groups: two declined cards (one cause) and a TypeError, in the stream's own slot.
    const deadLetters = defaultDeadLetterStream(payments, true);
    const park = (errorClass: string, error: string) =>
      redis.xadd(
        deadLetters,
        '*',
        'dlq:reason',
        'max-deliveries',
        'dlq:stream',
        payments,
        'dlq:id',
        '1-1',
        'dlq:group',
        'g',
        'dlq:consumer',
        'c1',
        'dlq:error',
        error,
        'dlq:error_class',
        errorClass,
        'dlq:deliveries',
        '5',
        'dlq:time',
        String(Date.now()),
        'data',
        '{}',
      ) as Promise<string>;
    await park('PaymentError', 'Card 1 declined');
    await park('PaymentError', 'Card 2 declined');
    await park('TypeError', 'sku is undefined');
    // Schedule: one due in ten minutes, one overdue.
    await scheduleEntry(redis, reminders, 'later-1', Date.now() + 600_000, '', ['*'], envelope({ n: 1 }, 'later-1'));
    await scheduleEntry(redis, reminders, 'late-1', Date.now() - 2_000, '', ['*'], envelope({ n: 2 }, 'late-1'));
    // Blocked keys: key customer-7 of group g of the orders, parked on a dead letter, two held.
    await seedBlockedKey(redis, {
      stream: orders,
      group: 'g',
      key: 'customer-7',
      state: 'parked',
      entry: ids[0],
      since: Date.now() - 60_000,
      deadLetter: '1-1',
      deadLetterStream: defaultDeadLetterStream(orders, true),
      held: ['{"amount":1}', '{"amount":2}'],
    });

    const c = await startConsoleApp({
      connection: { cluster: cluster.startupNodes },
      streams: [orders, payments, reminders],
      auditStream: unique('audit'),
      guard: () => 'browser',
    });
    closers.push(() => c.app.close());

    const { page, errors } = await open(c, `#search?${q({ stream: orders })}`);
    const box = page.locator('[data-test=stream-search] [data-test=search]');
    await box.locator('input[name=where]').fill('payload.amount > 20');
    await box.locator('[data-test=search-submit]').click();
    await page.locator('[data-test=search-summary]').filter({ hasText: '2 matched, 5 entries looked at' }).waitFor();
    expect((await box.locator('[data-test=search-hit]').allTextContents()).join(' ')).toContain(ids[2]);

    await page.goto(`${c.base}#dead-letters?${q({ stream: payments })}`);
    await page.waitForSelector('[data-test=failure-groups] table');
    const groups = (await page.textContent('[data-test=failure-groups]')) ?? '';
    expect(groups).toContain('2 groups. All 3 records read.');
    expect(groups).toMatch(/PaymentError\s*Card <n> declined/);

    await page.goto(`${c.base}#scheduled?${q({ stream: reminders })}`);
    await page.waitForSelector('[data-test=scheduled]');
    expect(await page.textContent('[data-test=schedule-summary]')).toMatch(/^2 scheduled; next due .*Oldest overdue by/);
    expect(await page.textContent('[data-test=scheduled]')).toContain('later-1');

    await page.goto(`${c.base}#blocked?${q({ stream: orders, group: 'g' })}`);
    await page.waitForSelector('[data-test=blocked-keys]');
    expect(await page.textContent('[data-test=blocked-summary]')).toMatch(/^1 key blocked · 2 entries held\./);
    expect(await page.textContent('[data-test=blocked-keys]')).toMatch(/customer-7\s*parked/);
    expect(errors).toEqual([]);
  });
});
