import type { Browser } from 'playwright-core';
import { probeCapabilities } from '../../libs/nest-redis-streams/src/redis/capabilities.js';
import { testContext, unique } from '../support/helpers.js';
import { launchConsoleBrowser, startConsoleApp } from './console-app.js';

// Issue 25: the capability report reaches the console's overview page, not only its API — the
// person on call sees which server runs, which stream features the transport may use, and a node
// below the patch floor of the stream RESTORE fix.
const { redis, closers } = testContext();

let browser: Browser;
beforeAll(async () => {
  browser = await launchConsoleBrowser();
}, 30_000);
afterAll(() => browser?.close());

describe("the console's overview", () => {
  it("shows the server's version, each stream capability as every node has it, and the patch floor", async () => {
    const stream = unique('caps-page');
    await redis.xgroup('CREATE', stream, 'billing', '$', 'MKSTREAM');
    const c = await startConsoleApp({ streams: [stream], auditStream: unique('audit') });
    closers.push(() => c.app.close());
    const page = await browser.newPage();
    closers.push(() => page.close());
    await page.goto(c.base);
    await page.waitForSelector('[data-test=capabilities]');
    const line = (await page.textContent('[data-test=capabilities]')) ?? '';

    const caps = await probeCapabilities(redis, unique('caps-probe'));
    const node = caps.nodes[0];
    expect(line).toContain(`${node.server} ${node.version}`);
    const said = (label: string, has: boolean) => expect(line).toContain(`${label} ${has ? 'yes' : 'no'}`);
    said('XREADGROUP CLAIM', caps.all.claim);
    said('XADD IDMP', caps.all.idmp);
    said('ACKED trim', caps.all.trimConditions);
    said('XACKDEL', caps.all.ackDelete);
    said('XNACK', caps.all.nack);
    if (node.patchFloor.ok) expect(line).not.toContain('below the stream RESTORE fix');
    else expect(line).toContain(`upgrade to ${node.patchFloor.floor}`);
  }, 60_000);
});
