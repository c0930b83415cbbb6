import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Redis } from 'ioredis';
import { AuditLog, OperationError, StreamOperations } from 'nest-redis-streams';
import { redisClient, redisUrl, testContext, unique, waitFor } from '../support/helpers.js';
import { type ConsoleApp, q, startConsoleApp } from './console-app.js';
import { startRedisGate } from '../support/redis-gate.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startRedis } = require('../../scripts/lib/redis-process.cjs') as {
  startRedis(options?: {
    appendonly?: boolean;
    extraArgs?: string[];
  }): Promise<{ url: string; port: number; stop(): Promise<void> }>;
};

const { redis, closers } = testContext();

async function start(...args: Parameters<typeof startConsoleApp>): Promise<ConsoleApp> {
  const started = await startConsoleApp(...args);
  closers.push(() => started.app.close());
  return started;
}

/** A private redis-server (maxmemory and command counts of its own) and a client of it. */
async function privateRedis(): Promise<{ url: string; port: number; admin: Redis }> {
  const own = await startRedis({ appendonly: false, extraArgs: ['--maxmemory-policy', 'noeviction'] });
  closers.push(() => own.stop());
  const admin = redisClient(own.url);
  closers.push(() => admin.quit());
  return { url: own.url, port: own.port, admin };
}

/** Stream `g` group with two entries pending at c1 and one dead letter; returns their ids. */
async function arrange(client: Redis, payload: string[] = ['n', '1']) {
  const stream = unique('integrity');
  await client.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
  const ids = [(await client.xadd(stream, '*', ...payload)) as string, (await client.xadd(stream, '*', 'n', '2')) as string];
  await client.xreadgroup('GROUP', 'g', 'c1', 'STREAMS', stream, '>');
  const meta = ['dlq:reason', 'max-deliveries', 'dlq:stream', stream, 'dlq:id', ids[0], 'dlq:group', 'g', 'dlq:consumer', 'c1'];
  const letter = (await client.xadd(`${stream}:dlq`, '*', ...meta, 'dlq:error', 'boom', 'n', '1')) as string;
  return { stream, ids, letter, audit: unique('audit') };
}

const commandCalls = async (client: Redis, command: string) => {
  const match = new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(await client.info('commandstats'));
  return match ? Number(match[1]) : 0;
};

describe('console audit integrity, bounds and served streams (real Redis)', () => {
  it('does not run a write whose audit record Redis refuses (maxmemory, noeviction) and says nothing was done', async () => {
    const { url, admin } = await privateRedis();
    const { stream, ids, letter, audit } = await arrange(admin);
    const c = await start({ connection: url, streams: [stream], auditStream: audit, guard: () => 'alice' });
    await c.get('session');

    await admin.config('SET', 'maxmemory', '1');
    const discard = await c.post('dead-letters/discard', { stream, id: letter });
    expect(discard.status).toBe(503);
    expect(discard.body.message).toContain(`Nothing was done: audit stream "${audit}" refused the record of dlq.discard`);
    expect(discard.body.message).toContain('OOM');
    // XDEL and XACK are allowed under noeviction: only the audit-first order kept them from running.
    const ack = await c.post('ack', { stream, group: 'g', id: ids[0] });
    expect(ack.status).toBe(503);
    expect(await admin.xlen(`${stream}:dlq`)).toBe(1);
    expect((await admin.xpending(stream, 'g'))[0]).toBe(2);
    expect(await admin.exists(audit)).toBe(0);

    await admin.config('SET', 'maxmemory', '0');
    expect((await c.post('dead-letters/discard', { stream, id: letter })).body).toEqual({ discarded: letter });
    const [record] = (await c.get('audit')).body.items;
    expect(record).toMatchObject({ action: 'dlq.discard', actor: 'alice', state: 'done', ok: true, target: letter });
    expect(record.startedAt).toBeLessThanOrEqual(record.at);
    expect(await admin.xlen(audit)).toBe(1);
  }, 60_000);

  it('says what was done when a write ran but its outcome could not be recorded, and the audit keeps its intent', async () => {
    const { url, admin } = await privateRedis();
    const stream = unique('integrity-big');
    await admin.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    // A 2 MB payload written and delivered inside Redis (no 2 MB query buffer to blur used_memory).
    await admin.eval(
      "redis.call('XADD', KEYS[1], '*', 'blob', string.rep('x', 2000000)) redis.call('XREADGROUP', 'GROUP', 'g', 'c1', 'STREAMS', KEYS[1], '>') return 1",
      1,
      stream,
    );
    const [[id]] = await admin.xrange(stream, '-', '+');
    const audit = unique('audit');
    const c = await start({ connection: url, streams: [stream], auditStream: audit, guard: () => 'alice' });
    await c.get('session');

    // Room for the intent record, not for the 2 MB copy that parking makes: the outcome is refused.
    const used = Number(/^used_memory:(\d+)/m.exec(await admin.info('memory'))![1]);
    await admin.config('SET', 'maxmemory', String(used + 256 * 1024));
    const park = await c.post('park', { stream, group: 'g', id });
    await admin.config('SET', 'maxmemory', '0');
    expect(park.status).toBe(500);
    expect(park.body.message).toContain(`park on stream "${stream}" was carried out ({"parked":"${id}"`);
    expect(park.body.message).toContain(`could not be recorded in audit stream "${audit}"`);
    expect(park.body.message).toContain('shows it as started. Check the stream before repeating it.');
    expect(await admin.xlen(`${stream}:dlq`)).toBe(1);
    const [record] = (await c.get('audit')).body.items;
    expect(record).toMatchObject({ action: 'park', target: id, state: 'started', ok: false, actor: 'alice' });
    expect(park.body.message).toContain(`record ${record.id}`);
  }, 60_000);

  it('keeps refused requests apart: 300 refusals with a cap of 10 do not push out the accepted discard', async () => {
    const { stream, letter, audit } = await arrange(redis);
    const ops = new StreamOperations(redis, { streams: [stream], auditStream: audit, auditMaxLen: 10, auditRefusalsMaxLen: 10 });
    await ops.discard('alice', stream, letter);
    for (let i = 0; i < 300; i++) {
      await expect(ops.discard('mallory', stream, '1-1')).rejects.toBeInstanceOf(OperationError);
    }
    const writes = (await ops.auditTrail(1_000)).items;
    expect(writes.map((r) => [r.actor, r.action, r.target, r.state, r.ok])).toEqual([
      ['alice', 'dlq.discard', letter, 'done', true],
    ]);
    const refused = (await ops.auditTrail(1_000, undefined, true)).items;
    expect(refused[0]).toMatchObject({ actor: 'mallory', action: 'dlq.discard', state: 'refused', ok: false });
    expect(refused[0].result).toContain(`has no entry 1-1`);
    // The refusals' own cap applies (MAXLEN ~ trims whole nodes of 100 entries).
    expect(refused.length).toBeGreaterThanOrEqual(10);
    expect(refused.length).toBeLessThan(300);
    expect(await redis.xlen(audit)).toBe(1);
  });

  it('the outcome script replaces each intent and trims the writes to about auditMaxLen (AuditLog against Redis)', async () => {
    const stream = unique('audit-log');
    const log = new AuditLog(redis, { stream, maxLen: 10, refusalStream: `${stream}:refused`, refusalMaxLen: 10 });
    const intent = { actor: 'alice', action: 'ack', stream: 's', group: 'g', target: '1-1', params: '{}' };
    for (let i = 0; i < 250; i++) {
      const begun = await log.begin(intent);
      expect(await redis.xlen(stream)).toBeGreaterThan(0);
      await log.finish(begun, intent, i % 2 === 0, `{"n":${i}}`);
    }
    const { items } = await log.list({ count: 1_000 });
    expect(items.length).toBeGreaterThanOrEqual(10);
    expect(items.length).toBeLessThan(250);
    expect(new Set(items.map((r) => r.state))).toEqual(new Set(['done']));
    expect(items[0]).toMatchObject({ ok: false, result: '{"n":249}', actor: 'alice', action: 'ack' });
    expect(items[1]).toMatchObject({ ok: true, result: '{"n":248}' });
    // A refusal takes its intent out of the writes' stream.
    const begun = await log.begin(intent);
    await log.refuse(intent, 'not pending', begun);
    expect((await log.list({ count: 1 })).items[0].result).toBe('{"n":249}');
    expect((await log.list({ count: 1, refusals: true })).items[0]).toMatchObject({ state: 'refused', result: 'not pending' });
  });

  it('with the default options, the console records a refused write in <auditStream>:refused, never among the writes', async () => {
    const { stream, ids, audit } = await arrange(redis);
    const c = await start({ streams: [stream], auditStream: audit, guard: () => 'alice' });
    expect((await c.post('ack', { stream, group: 'g', id: ids[0] })).status).toBe(200);
    const refused = await c.post('ack', { stream, group: 'g', id: ids[0] });
    expect(refused.status).toBe(404);
    expect((await c.post('ack', { stream: unique('elsewhere'), group: 'g', id: ids[1] })).status).toBe(404);
    expect(await redis.xlen(audit)).toBe(1);
    expect(await redis.xlen(`${audit}:refused`)).toBe(2);
    const [, [, fields]] = await redis.xrange(`${audit}:refused`, '-', '+');
    expect(fields).toEqual(expect.arrayContaining(['state', 'refused', 'actor', 'alice']));
    // The writes are capped at 10,000 (about: MAXLEN ~) and the refusals at 1,000, apart.
    const ops = new StreamOperations(redis, { streams: [stream], auditStream: audit });
    expect((ops as unknown as { o: Record<string, number> }).o).toMatchObject({
      auditMaxLen: 10_000,
      auditRefusalsMaxLen: 1_000,
    });
    expect((await c.get('audit')).body.items.map((r: { state: string }) => r.state)).toEqual(['done']);
    // Both refusals are recorded; the console lists the one about its stream (an audit stream may be
    // shared with other apps' consoles, whose records about their streams are not its to show).
    expect(
      (await c.get('audit?refusals=true')).body.items.map((r: { state: string; stream: string }) => [r.state, r.stream]),
    ).toEqual([['refused', stream]]);
    expect((await c.get('audit?refusals=maybe')).body.message).toBe('refusals must be true or false, got "maybe".');
  });

  it('bounds every size a client sends: partitions=100000000 and count=5000 answer 400 naming the parameter and the limit', async () => {
    const { stream } = await arrange(redis);
    const c = await start({ streams: [stream], auditStream: unique('audit') });
    const huge = await c.get(`ownership?${q({ stream, group: 'g', partitions: 100_000_000 })}`);
    expect(huge.status).toBe(400);
    expect(huge.body.message).toBe('partitions must be a whole number from 1 to 1024, got "100000000".');
    for (const path of ['pending', 'entries', 'dead-letters', 'audit']) {
      const big = await c.get(`${path}?${q({ stream, group: 'g', count: 5000 })}`);
      expect({ path, status: big.status, message: big.body.message }).toEqual({
        path,
        status: 400,
        message: 'count must be an integer from 1 to 1000, got "5000".',
      });
    }
    expect((await c.get(`ownership?${q({ stream, group: 'g', partitions: 1024 })}`)).status).toBe(200);
  });

  it.each([
    ['Express', false],
    ['Fastify', true],
  ])(
    'stops a long read when the client leaves (%s): an aborted ownership read of 1,024 partitions sends no HMGET',
    async (_adapter, fastify) => {
      const { port, admin } = await privateRedis();
      const gate = await startRedisGate(port);
      closers.push(() => gate.close());
      const stream = unique('integrity-abort');
      await admin.xgroup('CREATE', stream, 'g', '$', 'MKSTREAM');
      const long = `ownership?${q({ stream, group: 'g', partitions: 1024 })}`;
      let reached = false;
      const guard = (req: unknown) => {
        if ((req as { url?: string }).url?.endsWith(long)) reached = true;
        return true;
      };
      const c = await start({ connection: gate.url, streams: [stream], auditStream: unique('audit'), guard }, { fastify });
      closers.push(async () => gate.release());
      let response: ServerResponse | null = null;
      c.app.getHttpServer().on('request', (req: IncomingMessage, res: ServerResponse) => {
        if (req.url?.endsWith(long) && !response) response = res;
      });
      await c.get('session');
      await admin.config('RESETSTAT');

      // The console's commands wait in the gate while the client gives up.
      gate.hold();
      const client = new AbortController();
      const aborted = fetch(`${c.base}/api/${long}`, { signal: client.signal }).catch((err: Error) => err);
      await waitFor(() => reached, 'the ownership request to pass the guard');
      client.abort();
      expect(await aborted).toMatchObject({ name: 'AbortError' });
      await waitFor(() => (response as ServerResponse | null)?.closed, 'the console to see the client leave');
      gate.release();

      // The same read, not aborted, sends its 1,024 HMGETs after the aborted one's commands on the same connection.
      const full = await c.get(long);
      expect(full.status).toBe(200);
      expect(full.body.ownership.partitions).toHaveLength(1024);
      expect(await commandCalls(admin, 'time')).toBe(2);
      expect(await commandCalls(admin, 'hmget')).toBe(1024);
    },
    60_000,
  );

  it('answers an empty page after the last possible id or before 0-0, and 400 to a time Date.parse would guess, never 500', async () => {
    const { stream, audit } = await arrange(redis);
    const c = await start({ streams: [stream], auditStream: audit });
    const last = '18446744073709551615-18446744073709551615';
    for (const path of ['entries', 'pending', 'dead-letters']) {
      const { status, body } = await c.get(`${path}?${q({ stream, group: 'g', after: last })}`);
      expect({ path, status, body }).toMatchObject({ path, status: 200, body: { items: [], next: null } });
    }
    for (const before of ['0', '0-0']) {
      const { status, body } = await c.get(`audit?${q({ before })}`);
      expect({ before, status, body }).toEqual({ before, status: 200, body: { items: [], next: null } });
    }
    for (const from of ['-1', '1,2', 'May 1']) {
      const { status, body } = await c.get(`entries?${q({ stream, from })}`);
      expect({ from, status, message: body.message }).toEqual({
        from,
        status: 400,
        message: `A time must be milliseconds since the epoch or an ISO date (2024-05-01T12:00:00Z), got "${from}".`,
      });
    }
  });

  it('refuses an audit cap that is not a positive integer when built (the outcome script wrote, then its XTRIM failed: a write answered as unrecorded)', () => {
    for (const [key, value] of [
      ['auditMaxLen', -1],
      ['auditMaxLen', Number.NaN],
      ['auditRefusalsMaxLen', 0],
      ['auditRefusalsMaxLen', 2.5],
    ] as const) {
      expect(() => new StreamOperations(redis, { [key]: value })).toThrow(
        `Option "${key}" must be a positive integer (console and CLI audit), got ${JSON.stringify(value)}.`,
      );
    }
  });

  it('answers 503 naming the grant when the ACL refuses the console user a command, not a bare 500', async () => {
    const { stream, audit } = await arrange(redis);
    const user = unique('console-acl').replace(/[^a-z0-9-]/gi, '-');
    await redis.call('ACL', 'SETUSER', user, 'on', '>pw', '~*', '&*', '+@all', '-xinfo|consumers');
    closers.push(async () => void (await redis.call('ACL', 'DELUSER', user)));
    const connection = redisUrl().replace('redis://', `redis://${user}:pw@`);
    const c = await start({ connection, streams: [stream], auditStream: audit });
    const refused = await c.get(`consumers?${q({ stream, group: 'g' })}`);
    expect(refused.status).toBe(503);
    expect(refused.body.message).toMatch(
      /^NOPERM .*'xinfo\|consumers'.*grant it with `ACL SETUSER <the console's Redis user> \+xinfo\|consumers`/,
    );
    expect((await c.get(`entries?${q({ stream })}`)).status).toBe(200);
  });

  it('a filtered dead-letter scan stops between pages once its signal fires', async () => {
    const { stream, audit } = await arrange(redis);
    const ops = new StreamOperations(redis, { streams: [stream], auditStream: audit });
    const ended = new AbortController();
    ended.abort();
    await expect(ops.listDeadLetters(stream, { reason: 'nothing-matches' }, {}, ended.signal)).rejects.toMatchObject({
      name: 'AbortError',
    });
    expect((await ops.listDeadLetters(stream, { reason: 'max-deliveries' })).items).toHaveLength(1);
  });

  it('without a stream list, serves only what the overview lists: other keys answer 404 on every endpoint, never 500', async () => {
    const { stream, ids, letter, audit } = await arrange(redis);
    const noGroup = unique('no-group');
    await redis.xadd(noGroup, '*', 'secret', 's3cr3t');
    const hash = unique('hash');
    await redis.hset(hash, 'secret', 's3cr3t');
    const c = await start({ auditStream: audit, guard: () => 'alice' });

    expect((await c.get(`entries?${q({ stream })}`)).body.items.map((e: { id: string }) => e.id)).toEqual(ids);
    expect((await c.get(`dead-letters?${q({ stream })}`)).body.items.map((d: { id: string }) => d.id)).toEqual([letter]);
    const body = { group: 'g', consumer: 'c2', from: 'c1', to: 'c2', all: true, force: true };
    const reads = ['entries', 'pending', 'entry', 'consumers', 'ownership', 'dead-letters', 'cursor-preview'];
    const writes = [
      'ack',
      'claim',
      'park',
      'dead-letters/redrive',
      'dead-letters/redrive-matching',
      'dead-letters/discard',
      'cursor',
      'consumers/delete',
      'consumers/hand-over',
    ];
    const expected = (key: string) =>
      key === hash
        ? `Key "${hash}" holds a hash, not a stream.`
        : `Stream "${key}" is not one the console serves: without a configured stream list it serves the streams that have consumer groups (as the overview lists them). Add it to streams to serve it.`;
    for (const key of [noGroup, hash, `${stream}:dlq`, audit, unique('missing')]) {
      for (const path of reads) {
        const { status, body: answer } = await c.get(`${path}?${q({ stream: key, group: 'g', id: ids[0] })}`);
        expect({ key, path, status, message: answer.message }).toEqual({ key, path, status: 404, message: expected(key) });
      }
      for (const path of writes) {
        const target = path === 'cursor' ? { end: true } : { id: path.startsWith('dead') ? letter : ids[0] };
        const { status, body: answer } = await c.post(path, { ...body, ...target, stream: key });
        expect({ key, path, status, message: answer.message }).toEqual({ key, path, status: 404, message: expected(key) });
      }
    }
    expect(await redis.hget(hash, 'secret')).toBe('s3cr3t');
    expect(await redis.xlen(noGroup)).toBe(1);
    expect(await redis.xlen(`${stream}:dlq`)).toBe(1);
    expect(await redis.exists(audit)).toBe(0);
  });
});
