import { testContext, unique } from '../support/helpers.js';
import { q, startConsoleApp } from './console-app.js';

const { redis, closers } = testContext();

describe('streams console on the Fastify adapter', () => {
  it('mounts under the global prefix: page, views, a guarded write with CSRF, read-only refusals', async () => {
    const stream = unique('console-fastify');
    await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    const id = (await redis.xadd(stream, '*', 'n', '1')) as string;
    await redis.xreadgroup('GROUP', 'g', 'c1', 'STREAMS', stream, '>');
    const audit = unique('audit');
    const c = await startConsoleApp(
      { streams: [stream], auditStream: audit, guard: () => 'carol' },
      { fastify: true, prefix: 'ops' },
    );
    closers.push(() => c.app.close());

    const page = await fetch(c.base);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(await page.text()).toContain('src="/ops/streams-console/assets/app.js"');
    expect((await c.get('overview')).body[0].groups[0]).toMatchObject({ group: 'g', pending: 1 });
    expect((await c.get(`pending?${q({ stream, group: 'g' })}`)).body.items[0]).toMatchObject({ id, fields: [['n', '1']] });
    expect((await c.post('ack', { stream, group: 'g', id }, {})).status).toBe(403);
    expect((await c.post('ack', { stream, group: 'g', id })).body).toEqual({ acked: id });
    expect((await redis.xpending(stream, 'g'))[0]).toBe(0);
    expect((await c.get('audit')).body.items[0]).toMatchObject({ actor: 'carol', action: 'ack', target: id, ok: true });

    const ro = await startConsoleApp(
      { streams: [stream], auditStream: audit, guard: () => true, readOnly: true, path: 'ro' },
      { fastify: true },
    );
    closers.push(() => ro.app.close());
    expect((await ro.post('cursor', { stream, group: 'g', end: true, force: true }, {})).status).toBe(405);
  });
});
