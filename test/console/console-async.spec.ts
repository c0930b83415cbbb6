import { Module } from '@nestjs/common';
import { RedisStreamsConsoleModule } from 'nest-redis-streams/console';
import { redisUrl, testContext, unique } from '../support/helpers.js';
import { q, startConsoleApp } from './console-app.js';

const { redis, closers } = testContext();

/** Settings a user's own config module provides (what forRootAsync's factory injects). */
class OpsSettings {
  readonly url = redisUrl();
  readonly operator = 'dora';
  constructor(
    readonly stream: string,
    readonly audit: string,
  ) {}
}

describe('RedisStreamsConsoleModule.forRootAsync (a factory with inject, real Redis)', () => {
  it('mounts at its path and runs with the options the factory built from an injected provider', async () => {
    const stream = unique('console-async');
    const other = unique('console-async-other');
    for (const key of [stream, other]) await redis.xgroup('CREATE', key, 'g', '0', 'MKSTREAM');
    const id = (await redis.xadd(stream, '*', 'n', '1')) as string;
    await redis.xreadgroup('GROUP', 'g', 'c1', 'STREAMS', stream, '>');
    const settings = new OpsSettings(stream, unique('audit'));

    @Module({ providers: [{ provide: OpsSettings, useValue: settings }], exports: [OpsSettings] })
    class SettingsModule {}
    let factoryRuns = 0;
    const consoleModule = RedisStreamsConsoleModule.forRootAsync({
      path: 'ops-console',
      imports: [SettingsModule],
      inject: [OpsSettings],
      useFactory: async (s: OpsSettings) => {
        factoryRuns++;
        await new Promise((resolve) => setImmediate(resolve)); // an async factory is awaited
        return { connection: s.url, streams: [s.stream], auditStream: s.audit, guard: () => s.operator, refreshMs: 500 };
      },
    });
    const c = await startConsoleApp({ path: 'ops-console' }, { console: consoleModule });
    closers.push(() => c.app.close());

    expect(factoryRuns).toBe(1);
    expect(c.base).toMatch(/\/ops-console$/);
    const page = await fetch(c.base);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('src="/ops-console/assets/app.js"');
    // The factory's guard makes the console writable and names the operator; its refreshMs is used.
    expect((await c.get('session')).body).toMatchObject({ writable: true, actor: 'dora', refreshMs: 500 });
    // Its stream list is the one shown and acted on: another stream is refused.
    expect((await c.get('overview')).body.map((s: { stream: string }) => s.stream)).toEqual([stream]);
    const refused = await c.get(`pending?${q({ stream: other, group: 'g' })}`);
    expect(refused.status).toBe(404);
    expect(refused.body.message).toContain(`Stream "${other}" is not one of the configured streams.`);
    // A write lands in the factory's audit stream, under the guard's name.
    expect((await c.post('ack', { stream, group: 'g', id })).body).toEqual({ acked: id });
    expect((await redis.xpending(stream, 'g'))[0]).toBe(0);
    const [[, fields]] = await redis.xrevrange(settings.audit, '+', '-', 'COUNT', 1);
    expect(fields).toEqual(expect.arrayContaining(['actor', 'dora', 'action', 'ack', 'target', id]));
  });
});
