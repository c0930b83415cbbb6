import { existsSync } from 'node:fs';
import { Controller, Logger } from '@nestjs/common';
import { EventPattern } from '@nestjs/microservices';
import { StreamOperations } from 'nest-redis-streams';
import { chromium } from 'playwright-core';
import { runCli } from '../cli/run-cli.js';
import { removeIdleConsumers } from '../../libs/nest-redis-streams/src/recovery/idle-consumers.js';
import { withStreamScripts } from '../../libs/nest-redis-streams/src/redis/scripts.js';
import { redisClient, startMicroservice, testContext, unique, waitFor } from '../support/helpers.js';
import { q, startConsoleApp } from './console-app.js';

const { redis, closers } = testContext();

/** A handler of `stream` in group `g`, exclusive (one partition: it owns the stream itself) or shared. */
function handlerOf(stream: string, exclusive: boolean) {
  @Controller()
  class Quiet {
    @EventPattern(
      stream,
      exclusive ? { group: 'g', partitions: 1, ownership: 'exclusive', ownershipLeaseMs: 600 } : { group: 'g' },
    )
    handle() {}
  }
  return Quiet;
}

/**
 * How long XINFO says the consumer has been quiet: `idle` where that is all there is (Redis < 7.2,
 * where a blocked read does not reset it); `inactive` where the server has it (7.2+, 8.x, Valkey:
 * there `idle` restarts with every read attempt, `inactive` counts from the last read that
 * delivered something; -1 when none ever did).
 */
const xinfoIdle = async (stream: string, consumer: string) => {
  const rows = (await redis.xinfo('CONSUMERS', stream, 'g')) as unknown[][];
  const row = rows.find((r) => r[1] === consumer);
  if (!row) return null;
  if (row.includes('inactive')) {
    const inactive = Number(row[row.indexOf('inactive') + 1]);
    return inactive === -1 ? Number.POSITIVE_INFINITY : inactive;
  }
  return Number(row[row.indexOf('idle') + 1]);
};

describe('consumer liveness in the console and the CLI (real servers on quiet streams, real Redis)', () => {
  it('a healthy consumer of a quiet stream is active by its heartbeat, not idle by XINFO; once stopped it is not', async () => {
    const stream = unique('quiet');
    const instance = await startMicroservice([handlerOf(stream, true)], { consumer: 'quiet-pod' });
    let stopped = false;
    closers.push(() => (stopped ? Promise.resolve() : instance.app.close()));
    // The stream is quiet: the consumer reads nothing, so by XINFO alone it looks gone.
    const ops = new StreamOperations(redis, { activeConsumerMs: 500 });
    await waitFor(async () => ((await xinfoIdle(stream, 'quiet-pod')) ?? 0) > 1_500, 'XINFO idle past 3 × activeConsumerMs');
    const [live] = await ops.consumers(stream, 'g');
    expect(live).toMatchObject({ name: 'quiet-pod', active: true, liveness: 'heartbeat' });
    expect(live.heartbeatLeftMs).toBeGreaterThan(0);
    // The longer of its membership lease (600 ms) and its beat (three reclaim rounds of 5 s).
    expect(live.heartbeatLeftMs).toBeLessThanOrEqual(15_000);

    const c = await startConsoleApp({ streams: [stream], auditStream: unique('audit') });
    closers.push(() => c.app.close());
    const shown = await c.get(`consumers?${q({ stream, group: 'g' })}`);
    expect(shown.body).toEqual([expect.objectContaining({ name: 'quiet-pod', active: true, liveness: 'heartbeat' })]);

    // The group page: the state says what it was judged by, and no delete button for a live consumer.
    const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (or set CHROMIUM_PATH).`);
    const writer = await startConsoleApp({ streams: [stream], auditStream: unique('audit'), guard: () => 'ops', path: 'w' });
    closers.push(() => writer.app.close());
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    closers.push(() => browser.close());
    const page = await browser.newPage();
    await page.goto(`${writer.base}#group?${new URLSearchParams({ stream, group: 'g' })}`);
    await page.waitForSelector('[data-test=group] table');
    const row = page.locator('[data-test=group] tr', { hasText: 'quiet-pod' }).first();
    expect(await row.textContent()).toContain('active · heartbeat');
    expect(await row.locator('button').count()).toBe(0);

    const cli = await runCli(['consumers', stream, 'g']);
    expect(cli.code).toBe(0);
    expect(cli.stdout).toMatch(/quiet-pod\s+0\s+\S.*\s+active\s+heartbeat\s*$/m);

    // Stopped: it leaves the members; its liveness falls back to the server's figures, which on
    // 7.2+ count its last read attempt, so it turns inactive once activeConsumerMs has passed.
    await instance.app.close();
    stopped = true;
    const [gone] = await waitFor(async () => {
      const found = await ops.consumers(stream, 'g');
      return found[0]?.liveness !== 'heartbeat' && found[0]?.active === false ? found : null;
    }, 'the heartbeat to end and the consumer to turn inactive');
    expect(gone).toMatchObject({ name: 'quiet-pod', active: false, heartbeatLeftMs: null });
    expect(gone.liveness).toBe(gone.inactiveMs === null ? 'idle' : 'server');
  }, 60_000);

  it('a live consumer of a quiet stream under shared consumption: active by its beat on every server (Redis < 7.2 too), never deleted; once stopped, it can be', async () => {
    const stream = unique('quiet-beat');
    const instance = await startMicroservice([handlerOf(stream, false)], { consumer: 'beating-pod', reclaimIntervalMs: 200 });
    let stopped = false;
    closers.push(() => (stopped ? Promise.resolve() : instance.app.close()));
    const ops = new StreamOperations(redis, { activeConsumerMs: 500 });
    // Quiet: by XINFO alone (Redis < 7.2's idle) it would be "quiet or gone", with a delete button.
    await waitFor(async () => ((await xinfoIdle(stream, 'beating-pod')) ?? 0) > 1_500, 'XINFO idle past 3 × activeConsumerMs');
    const [live] = await ops.consumers(stream, 'g');
    expect(live).toMatchObject({ name: 'beating-pod', active: true, liveness: 'heartbeat' });
    expect(live.heartbeatLeftMs).toBeGreaterThan(0);
    expect(live.heartbeatLeftMs).toBeLessThanOrEqual(1_000);

    // Every way to delete it refuses: the console's API (not only its button), the CLI, the cleanup.
    const c = await startConsoleApp({ streams: [stream], auditStream: unique('audit'), guard: () => 'ops' });
    closers.push(() => c.app.close());
    expect((await c.get(`consumers?${q({ stream, group: 'g' })}`)).body).toEqual([
      expect.objectContaining({ name: 'beating-pod', active: true, liveness: 'heartbeat' }),
    ]);
    const refused = await c.post('consumers/delete', { stream, group: 'g', consumer: 'beating-pod' });
    expect(refused.status).toBe(409);
    expect(refused.body.message).toContain('Consumer "beating-pod" of group "g" (stream "' + stream + '") is alive');
    const cli = await runCli(['consumers', stream, 'g', '--delete', 'beating-pod']);
    expect(cli.code).toBe(3);
    expect(cli.stderr).toContain('is alive');
    const scripted = withStreamScripts(redisClient());
    closers.push(() => scripted.quit());
    expect(await removeIdleConsumers(scripted, stream, 'g', 100, new Logger('test'), 'another-pod')).toEqual([]);
    expect(await xinfoIdle(stream, 'beating-pod')).not.toBeNull();
    const cliList = await runCli(['consumers', stream, 'g']);
    expect(cliList.stdout).toMatch(/beating-pod\s+0\s+\S.*\s+active\s+heartbeat\s*$/m);

    // Stopped: its beat ends with it; the console deletes it.
    await instance.app.close();
    stopped = true;
    const [gone] = await ops.consumers(stream, 'g');
    expect(gone).toMatchObject({ name: 'beating-pod', heartbeatLeftMs: null });
    expect((await c.post('consumers/delete', { stream, group: 'g', consumer: 'beating-pod' })).body).toEqual({
      deleted: 'beating-pod',
    });
  }, 60_000);

  it('without a reclaim round (no beat) under shared consumption the source is the server, and the CLI says which', async () => {
    const stream = unique('quiet-shared');
    const instance = await startMicroservice([handlerOf(stream, false)], { consumer: 'shared-pod', reclaimIntervalMs: 0 });
    closers.push(() => instance.app.close());
    const ops = new StreamOperations(redis, { activeConsumerMs: 500 });
    const [row] = await waitFor(async () => {
      const found = await ops.consumers(stream, 'g');
      return found.length === 1 ? found : null;
    }, 'the consumer to register');
    const source = row.inactiveMs === null ? 'idle' : 'server';
    expect(row).toMatchObject({ name: 'shared-pod', liveness: source, heartbeatLeftMs: null });
    const cli = await runCli(['consumers', stream, 'g']);
    expect(cli.stdout).toContain(source === 'idle' ? 'idle (Redis < 7.2)' : 'server idle');
  }, 60_000);
});
