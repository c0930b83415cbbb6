import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import { testContext, unique, waitFor } from '../support/helpers.js';
import { type ConsoleApp, q, startConsoleApp } from './console-app.js';

const { redis, closers } = testContext();

async function start(...args: Parameters<typeof startConsoleApp>): Promise<ConsoleApp> {
  const started = await startConsoleApp(...args);
  closers.push(() => started.app.close());
  return started;
}

/** A stream with group `g` (2 entries pending at c1, 3 undelivered) and group `idle` (no consumers). */
async function arrange(): Promise<{ stream: string; ids: string[]; audit: string }> {
  const stream = unique('console');
  await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
  await redis.xgroup('CREATE', stream, 'idle', '$');
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) ids.push((await redis.xadd(stream, '*', 'n', String(i), 'card', `4111-${i}`)) as string);
  await redis.xreadgroup('GROUP', 'g', 'c1', 'COUNT', 2, 'STREAMS', stream, '>');
  return { stream, ids, audit: unique('audit') };
}

async function deadLetter(stream: string, reason: string, group: string, original: string[]): Promise<string> {
  const meta = ['dlq:reason', reason, 'dlq:stream', stream, 'dlq:id', '1-1', 'dlq:group', group, 'dlq:consumer', 'c1'];
  meta.push('dlq:error', 'boom', 'dlq:error_class', 'Error', 'dlq:deliveries', '5', 'dlq:time', String(Date.now()));
  return (await redis.xadd(`${stream}:dlq`, '*', ...meta, ...original)) as string;
}

const mask = (fields: Array<[string, string]>) => fields.map(([n, v]): [string, string] => [n, n === 'card' ? '****' : v]);

describe('streams console API (Express, real Redis)', () => {
  it('serves every view: overview with badges, PEL pages, entries by time, entry by id, consumers, dead letters with losses, cursor preview', async () => {
    const { stream, ids, audit } = await arrange();
    const poison = await deadLetter(stream, 'max-deliveries', 'g', ['n', '9', 'card', '4111-9']);
    await deadLetter(stream, 'trimmed-undelivered', 'g', ['dlq:lost_count', '4']);
    const c = await start({ streams: [stream], auditStream: audit, redact: mask, stalledAfterMs: 1 });

    const overview = await waitFor(async () => {
      const { body } = await c.get('overview');
      return body[0].groups.find((g: { group: string }) => g.group === 'g').badges.includes('stalled') ? body : null;
    }, 'group g to be stalled');
    expect(overview[0]).toMatchObject({ stream, length: 5, deadLetterStream: `${stream}:dlq`, readOnly: false });
    const byName = Object.fromEntries(overview[0].groups.map((g: { group: string }) => [g.group, g]));
    expect(byName.g).toMatchObject({ pending: 2, lag: 3, consumers: 1, groupDeadLetters: 2, badges: ['stalled'] });
    expect(byName.idle).toMatchObject({ pending: 0, lag: 5, consumers: 0, badges: ['no-consumers'] });

    const page1 = await c.get(`pending?${q({ stream, group: 'g', count: 1 })}`);
    expect(page1.body.items).toEqual([
      expect.objectContaining({
        id: ids[0],
        consumer: 'c1',
        deliveries: 1,
        fields: [
          ['n', '0'],
          ['card', '****'],
        ],
      }),
    ]);
    const page2 = await c.get(`pending?${q({ stream, group: 'g', count: 1, after: page1.body.next })}`);
    expect(page2.body.items.map((e: { id: string }) => e.id)).toEqual([ids[1]]);
    const t = (id: string) => id.split('-')[0];
    const range = await c.get(`entries?${q({ stream, from: t(ids[2]), to: t(ids[3]) })}`);
    expect(range.body.items.map((e: { id: string }) => e.id)).toEqual(expect.arrayContaining([ids[2], ids[3]]));
    expect(range.body.items.every((e: { fields: string[][] }) => e.fields[1][1] === '****')).toBe(true);
    const entry = await c.get(`entry?${q({ stream, group: 'g', id: ids[1] })}`);
    expect(entry.body.entry).toMatchObject({
      id: ids[1],
      pending: { consumer: 'c1', deliveries: 1 },
      fields: [
        ['n', '1'],
        ['card', '****'],
      ],
    });
    expect((await c.get(`entry?${q({ stream, id: '1-1' })}`)).body).toEqual({ entry: null });

    const consumers = await c.get(`consumers?${q({ stream, group: 'g' })}`);
    expect(consumers.body).toEqual([expect.objectContaining({ name: 'c1', pending: 2, active: true, holds: [ids[0], ids[1]] })]);

    const letters = await c.get(`dead-letters?${q({ stream, reason: 'max-deliveries' })}`);
    expect(letters.body.items).toEqual([
      expect.objectContaining({
        id: poison,
        group: 'g',
        error: 'boom',
        deliveries: 5,
        fields: [
          ['n', '9'],
          ['card', '****'],
        ],
      }),
    ]);
    expect(letters.body.tally).toMatchObject({ total: 2, lost: 4, byReason: { 'max-deliveries': 1, 'trimmed-undelivered': 1 } });

    const preview = await c.get(`cursor-preview?${q({ stream, group: 'g', id: ids[0] })}`);
    expect(preview.body).toMatchObject({ effect: 'redeliver', entries: 1, pending: 2, activeConsumers: ['c1'] });

    expect((await c.get(`pending?${q({ stream, group: 'nope' })}`)).status).toBe(404);
    expect((await c.get(`pending?${q({ stream: 'elsewhere', group: 'g' })}`)).status).toBe(404);
    expect((await c.get(`entry?${q({ stream, id: 'x' })}`)).body.message).toContain('id must be a stream id');
  });

  it('carries out every action for a guarded caller and audits each with who, what and how it went', async () => {
    const { stream, ids, audit } = await arrange();
    const poison = await deadLetter(stream, 'max-deliveries', 'g', ['n', '9']);
    const other = await deadLetter(stream, 'non-retryable', 'h', ['n', '8']);
    const c = await start({ streams: [stream], auditStream: audit, guard: () => 'alice' });
    expect((await c.get('session')).body).toMatchObject({ writable: true, reason: null, actor: 'alice' });

    expect((await c.post('claim', { stream, group: 'g', id: ids[0], consumer: 'c2' })).body).toEqual({
      claimed: ids[0],
      from: 'c1',
      to: 'c2',
    });
    expect((await c.post('ack', { stream, group: 'g', id: ids[0] })).body).toEqual({ acked: ids[0] });
    expect((await c.post('ack', { stream, group: 'g', id: ids[0] })).status).toBe(404);
    const parked = await c.post('park', { stream, group: 'g', id: ids[1] });
    const [[, parkedFields]] = await redis.xrange(`${stream}:dlq`, parked.body.deadLetterId, parked.body.deadLetterId);
    expect(parkedFields).toEqual(expect.arrayContaining(['dlq:error_class', 'ParkedByOperator', 'n', '1']));

    const one = await c.post('dead-letters/redrive', { stream, id: poison });
    expect((await redis.xrange(stream, one.body.newId, one.body.newId))[0][1]).toEqual([
      ...['n', '9', 'nrs:group', 'g'],
      ...['nrs:redriven_from', poison, 'nrs:original_id', '1-1'],
    ]);
    expect((await c.post('dead-letters/redrive-matching', { stream })).status).toBe(400);
    const byGroup = await c.post('dead-letters/redrive-matching', { stream, group: 'h' });
    expect(byGroup.body.redriven.map((r: { id: string }) => r.id)).toEqual([other]);
    expect((await c.post('dead-letters/discard', { stream, id: parked.body.deadLetterId })).body).toEqual({
      discarded: parked.body.deadLetterId,
    });

    const refused = await c.post('cursor', { stream, group: 'g', end: true });
    expect(refused.status).toBe(409);
    expect(refused.body.message).toContain('has active consumers (c1, c2)');
    expect((await c.post('cursor', { stream, group: 'g', end: true, force: true })).body).toMatchObject({
      from: ids[1],
      effect: 'skip',
      entries: 5,
    });

    // 3 never delivered + 2 re-driven above. c1's two entries are gone: one claimed away and acked, one parked.
    const holdsNothing = await c.post('consumers/delete', { stream, group: 'g', consumer: 'c1' });
    expect(holdsNothing.body).toEqual({ deleted: 'c1' });

    const trail = (await c.get('audit?count=50')).body.items as Array<{
      actor: string;
      action: string;
      ok: boolean;
      target: string;
    }>;
    expect(trail.map((r) => `${r.action}:${r.ok}`)).toEqual([
      'consumer.delete:true',
      'setid:true',
      'dlq.discard:true',
      'dlq.redrive-matching:true',
      'dlq.redrive:true',
      'park:true',
      'ack:true',
      'claim:true',
    ]);
    expect(new Set(trail.map((r) => r.actor))).toEqual(new Set(['alice']));
    // The refused requests (nothing changed) are kept apart, with why.
    const refusals = (await c.get('audit?count=50&refusals=true')).body.items;
    expect(refusals.map((r: { action: string; state: string }) => `${r.action}:${r.state}`)).toEqual([
      'setid:refused',
      'ack:refused',
    ]);
    expect(refusals[0].result).toContain('has active consumers');
  });

  it('refuses a consumer deletion while it holds entries, and allows it after a hand-over', async () => {
    const { stream, ids, audit } = await arrange();
    const c = await start({ streams: [stream], auditStream: audit, guard: () => true });
    const refused = await c.post('consumers/delete', { stream, group: 'g', consumer: 'c1' });
    expect(refused.status).toBe(409);
    expect(refused.body.message).toContain('holds 2 pending entries');
    expect((await c.post('consumers/hand-over', { stream, group: 'g', from: 'c1', to: 'c9' })).body).toEqual({
      moved: 2,
      tombstoned: [],
    });
    expect((await c.post('consumers/delete', { stream, group: 'g', consumer: 'c1' })).body).toEqual({ deleted: 'c1' });
    const rows = (await redis.xpending(stream, 'g', '-', '+', 10)) as Array<[string, string]>;
    expect(rows.map(([id, consumer]) => [id, consumer])).toEqual([
      [ids[0], 'c9'],
      [ids[1], 'c9'],
    ]);
  });

  it('without a guard: reads work, writes answer 403 and the session says why', async () => {
    const { stream, ids, audit } = await arrange();
    const c = await start({ streams: [stream], auditStream: audit });
    const session = (await c.get('session')).body;
    expect(session).toMatchObject({ writable: false, csrfToken: null });
    expect(session.reason).toContain('Write actions are off: the console has no guard');
    expect((await c.get('overview')).status).toBe(200);
    const write = await c.post('ack', { stream, group: 'g', id: ids[0] }, {});
    expect(write.status).toBe(403);
    expect(write.body.message).toContain('no guard');
    expect(await redis.xlen(audit)).toBe(0);
  });

  it('read-only (global, or per stream) answers 405 to every write', async () => {
    const { stream, ids, audit } = await arrange();
    const writes: Array<[string, object]> = [
      ['ack', { stream, group: 'g', id: ids[0] }],
      ['claim', { stream, group: 'g', id: ids[0], consumer: 'x' }],
      ['park', { stream, group: 'g', id: ids[0] }],
      ['dead-letters/redrive', { stream, id: '1-1' }],
      ['dead-letters/redrive-matching', { stream, all: true }],
      ['dead-letters/discard', { stream, id: '1-1' }],
      ['cursor', { stream, group: 'g', end: true, force: true }],
      ['consumers/delete', { stream, group: 'g', consumer: 'c1' }],
      ['consumers/hand-over', { stream, group: 'g', from: 'c1', to: 'c2' }],
    ];
    const global = await start({ streams: [stream], auditStream: audit, guard: () => true, readOnly: true });
    expect((await global.get('session')).body).toMatchObject({ writable: false, reason: expect.stringContaining('read-only') });
    for (const [path, body] of writes)
      expect({ path, status: (await global.post(path, body, {})).status }).toEqual({ path, status: 405 });

    const open = unique('console-open');
    await redis.xgroup('CREATE', open, 'g', '0', 'MKSTREAM');
    const perStream = await start({
      streams: [{ stream, readOnly: true }, open],
      auditStream: audit,
      guard: () => true,
      path: 'ro',
    });
    expect((await perStream.get('session')).body.readOnlyStreams).toEqual([stream]);
    for (const [path, body] of writes)
      expect({ path, status: (await perStream.post(path, body)).status }).toEqual({ path, status: 405 });
    expect((await perStream.post('cursor', { stream: open, group: 'g', end: true })).status).toBe(200);
    expect(await redis.xlen(stream)).toBe(5);
    expect((await redis.xpending(stream, 'g'))[0]).toBe(2);
  });

  it('refuses writes without the CSRF token, with a wrong one, or from another site', async () => {
    const { stream, ids, audit } = await arrange();
    const c = await start({ streams: [stream], auditStream: audit, guard: () => true });
    const { csrfToken } = (await c.get('session')).body;
    const body = { stream, group: 'g', id: ids[0] };
    expect((await c.post('ack', body, {})).status).toBe(403);
    expect((await c.post('ack', body, { 'x-nrs-csrf': `${csrfToken.slice(1)}x` })).body.message).toContain('CSRF');
    const crossSite = await c.post('ack', body, { 'x-nrs-csrf': csrfToken, 'sec-fetch-site': 'cross-site' });
    expect(crossSite.body.message).toContain('Cross-site');
    expect((await redis.xpending(stream, 'g'))[0]).toBe(2);
    expect((await c.post('ack', body)).status).toBe(200);
  });

  it('a guard that says no closes reads and writes; a Nest CanActivate class is built with the app injector', async () => {
    const { stream, audit } = await arrange();
    const deny = await start({
      streams: [stream],
      auditStream: audit,
      guard: (_req: unknown, access: string) => access === 'read',
    });
    expect((await deny.get('overview')).status).toBe(200);
    expect((await deny.post('cursor', { stream, group: 'g', end: true, force: true })).status).toBe(403);

    @Injectable()
    class HeaderGuard implements CanActivate {
      canActivate(context: ExecutionContext): boolean {
        const req = context.switchToHttp().getRequest<{ headers: Record<string, string>; user?: object }>();
        req.user = { username: req.headers['x-user'] };
        return req.headers['x-user'] === 'bob';
      }
    }
    const nest = await start({ streams: [stream], auditStream: audit, guard: HeaderGuard, path: 'guarded' });
    expect((await nest.get('overview')).status).toBe(403);
    const { csrfToken } = await (await fetch(`${nest.base}/api/session`, { headers: { 'x-user': 'bob' } })).json();
    const res = await fetch(`${nest.base}/api/cursor`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-user': 'bob', 'x-nrs-csrf': csrfToken },
      body: JSON.stringify({ stream, group: 'idle', id: '0' }),
    });
    expect(res.status).toBe(200);
    const [[, fields]] = await redis.xrevrange(audit, '+', '-', 'COUNT', 1);
    expect(fields.slice(fields.indexOf('actor'), fields.indexOf('actor') + 4)).toEqual(['actor', 'bob', 'action', 'setid']);
  });

  it('the session asks the guard about writes: a viewer gets no token and the reason; refused writes are audited apart', async () => {
    const { stream, ids, audit } = await arrange();
    const viewer = await start({
      streams: [stream],
      auditStream: audit,
      csrfSecret: 'shared',
      guard: (_req: unknown, access: string) => (access === 'read' ? 'viewer' : false),
    });
    const session = (await viewer.get('session')).body;
    expect(session).toMatchObject({ writable: false, csrfToken: null, actor: 'viewer' });
    expect(session.reason).toContain('The console guard refuses writes for viewer');

    @Injectable()
    class RoleGuard implements CanActivate {
      canActivate(context: ExecutionContext): boolean {
        const req = context.switchToHttp().getRequest<{ headers: Record<string, string>; nrsConsoleAccess?: string }>();
        return req.nrsConsoleAccess === 'read' || req.headers['x-role'] === 'admin';
      }
    }
    const nest = await start({ streams: [stream], auditStream: audit, guard: RoleGuard, path: 'roles' });
    const asRole = async (role: string) => (await fetch(`${nest.base}/api/session`, { headers: { 'x-role': role } })).json();
    expect(await asRole('viewer')).toMatchObject({ writable: false, csrfToken: null });
    expect(await asRole('admin')).toMatchObject({ writable: true, csrfToken: expect.any(String) });

    const writer = await start({
      streams: [stream],
      auditStream: audit,
      guard: () => 'alice',
      path: 'writer',
      csrfSecret: 'shared',
    });
    const { csrfToken } = (await writer.get('session')).body;
    const body = { stream, group: 'g', id: ids[0] };
    // The viewer holds a valid token (the secret is shared): only the guard stops it.
    expect((await viewer.post('ack', body, { 'x-nrs-csrf': csrfToken })).status).toBe(403);
    expect((await writer.post('park', body, {})).status).toBe(403);
    expect(
      (await writer.post('claim', { ...body, consumer: 'c2' }, { 'x-nrs-csrf': csrfToken, 'sec-fetch-site': 'cross-site' }))
        .status,
    ).toBe(403);
    expect((await redis.xpending(stream, 'g'))[0]).toBe(2);

    const refusals = await waitFor(async () => {
      const { body: trail } = await writer.get(`audit?${q({ refusals: 'true' })}`);
      return trail.items.length === 3 ? trail.items : null;
    }, 'the three refused writes in the refusal stream');
    expect(
      refusals.map((r: { action: string; actor: string; state: string; target: string }) => [r.action, r.state, r.target]),
    ).toEqual([
      ['claim', 'refused', ids[0]],
      ['park', 'refused', ids[0]],
      ['ack', 'refused', ids[0]],
    ]);
    expect(refusals.map((r: { result: string }) => r.result)).toEqual([
      expect.stringContaining('Cross-site'),
      expect.stringContaining('CSRF'),
      expect.stringContaining('The console guard refused'),
    ]);
    expect(refusals.every((r: { stream: string; group: string }) => r.stream === stream && r.group === 'g')).toBe(true);
    // The writes' own stream holds no record of them.
    expect((await writer.get('audit')).body.items).toEqual([]);
  });

  it('returns hostile field names and values as plain data', async () => {
    const stream = unique('console-hostile');
    await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    const id = (await redis.xadd(
      stream,
      '*',
      '__proto__',
      '{"polluted":1}',
      '<img src=x onerror=alert(1)>',
      '</script><script>alert(2)</script>',
    )) as string;
    await redis.xreadgroup('GROUP', 'g', 'c1', 'STREAMS', stream, '>');
    const c = await start({ streams: [stream], auditStream: unique('audit') });
    const { body } = await c.get(`pending?${q({ stream, group: 'g' })}`);
    expect(body.items[0].fields).toEqual([
      ['__proto__', '{"polluted":1}'],
      ['<img src=x onerror=alert(1)>', '</script><script>alert(2)</script>'],
    ]);
    expect(body.items[0].id).toBe(id);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('honours the global prefix and serves the page with a strict Content-Security-Policy and no inline script', async () => {
    const { stream } = await arrange();
    const c = await start({ streams: [stream], auditStream: unique('audit'), path: 'streams' }, { prefix: 'ops' });
    expect(c.base).toMatch(/\/ops\/streams$/);
    const page = await fetch(c.base);
    const html = await page.text();
    expect(page.headers.get('content-security-policy')).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    expect(html).toContain('<script type="module" src="/ops/streams/assets/app.js"></script>');
    expect(html).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
    expect(html).not.toMatch(/https?:\/\//);
    const css = await fetch(`${c.base}/assets/console.css`);
    expect(css.headers.get('content-type')).toContain('text/css');
    expect((await fetch(`${c.base}/assets/..%2Fconsole-api.controller.js`)).status).toBe(404);
    expect((await c.get('overview')).body[0].stream).toBe(stream);
  });
});
