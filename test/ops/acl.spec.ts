import { Controller } from '@nestjs/common';
import { EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { HealthIndicatorService } from '@nestjs/terminus';
import type { Redis } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import {
  DeadLetterService,
  PublishFailedError,
  RedisStreamsClient,
  RedisStreamsHealthIndicator,
  RedisStreamsMetrics,
  StreamOperations,
  collectStreamStats,
  trimSafely,
} from 'nest-redis-streams';
import { Registry } from 'prom-client';
import { redisClient, startMicroservice, unique, waitFor } from '../support/helpers.js';
import { aclFixFor, aclUserOf, explainAclError } from '../../libs/nest-redis-streams/src/redis/acl-hint.js';
import { readmeAclLines } from './acl-users.js';
import { CANARY_CAUSE, arrangeDeadLetters, canaryConsumer } from '../support/canary-fixtures.js';
import { scheduleEntry } from '../../libs/nest-redis-streams/src/schedule/index.js';
import { consumerBeatsKey, retryWaitsKey } from '../../libs/nest-redis-streams/src/keys/index.js';

// CommonJS helper shared with the scripts: a private redis-server whose users this test defines.
const { startRedis } = require('../../scripts/lib/redis-process.cjs') as {
  startRedis(): Promise<{ url: string; port: number; stop(): Promise<void> }>;
};

jest.setTimeout(60_000);

const PASSWORDS = {
  consumer: 'consumer-secret-1',
  producer: 'producer-secret-2',
  operator: 'operator-secret-3',
  keda: 'keda-secret-4',
};

describe('least privilege: the README ACL users', () => {
  let redisProcess: { url: string; port: number; stop(): Promise<void> };
  let admin: Redis;
  const closers: Array<() => unknown> = [];
  const urlOf = (user: keyof typeof PASSWORDS) => `redis://nrs-${user}:${PASSWORDS[user]}@127.0.0.1:${redisProcess.port}`;

  beforeAll(async () => {
    redisProcess = await startRedis();
    admin = redisClient(redisProcess.url);
    const lines = readmeAclLines(PASSWORDS);
    expect(lines.map((args) => args[2])).toEqual(['nrs-consumer', 'nrs-producer', 'nrs-operator', 'nrs-keda']);
    for (const [, ...args] of lines) await admin.call('ACL', ...args);
  });
  afterEach(async () => {
    while (closers.length) await closers.pop()!();
  });
  afterAll(async () => {
    await admin.quit();
    await redisProcess.stop();
  });

  it('run a server (reads, acks, retries, reclaims, dead letters, replies), a client, health and metrics, then work on the dead letters', async () => {
    const name = unique('acl').replace(/^t:/, '');
    const stream = `app:${name}`;
    const handled: string[] = [];
    let badAttempts = 0;
    @Controller()
    class Handlers {
      @EventPattern(name)
      handle(@Payload() data: { n: number; bad?: boolean }) {
        if (data.bad) {
          badAttempts++;
          throw new Error('bad entry');
        }
        handled.push(String(data.n));
      }
      @MessagePattern(`${name}:rpc`)
      double(@Payload() data: { n: number }) {
        return data.n * 2;
      }
    }
    // An entry a crashed consumer left behind, for the reclaimer to take over.
    await admin.xgroup('CREATE', stream, 'nest', '0', 'MKSTREAM');
    const orphan = await admin.xadd(stream, '*', 'data', JSON.stringify({ n: 0 }));
    await admin.xreadgroup('GROUP', 'nest', 'crashed-pod', 'COUNT', 1, 'STREAMS', stream, '>');
    await admin.xclaim(stream, 'nest', 'crashed-pod', 0, orphan!, 'IDLE', 600_000, 'JUSTID');

    const { app, server } = await startMicroservice([Handlers], {
      connection: urlOf('consumer'),
      keyPrefix: 'app:',
      maxDeliveries: 2,
      retryBackoffMs: 20,
      minIdleTimeMs: 1_000,
      reclaimIntervalMs: 100,
    });
    closers.push(() => app.close());
    const client = new RedisStreamsClient({ connection: urlOf('producer'), keyPrefix: 'app:', retention: { maxLen: 1_000 } });
    closers.push(() => client.close());
    const registry = new Registry();
    const metrics = new RedisStreamsMetrics()
      .attach(server, { registry, sampleIntervalMs: 0 })
      .attachClient(client, { registry });
    closers.push(() => metrics.close());

    for (let n = 1; n <= 5; n++) await lastValueFrom(client.emit(name, { n, bad: n === 3 }));
    // Delayed: the producer schedules it, the consumer's mover moves it.
    const later = await lastValueFrom(client.emit(name, { n: 6 }, { delayMs: 50 }));
    await expect(client.cancelScheduled(name, 'never-scheduled')).resolves.toBe(false);
    await expect(lastValueFrom(client.send(`${name}:rpc`, { n: 21 }))).resolves.toBe(42);
    await waitFor(() => handled.length === 6, 'the orphan (reclaimed), four good entries and the delayed one');
    expect(later).toEqual(expect.any(String));
    const deadLetterStream = `${stream}:dlq`;
    await waitFor(async () => (await admin.xlen(deadLetterStream)) === 1, 'the bad entry parked after two deliveries');
    // Under the role's ACL the retry script recorded the back-off's real times, and the reclaim round beats.
    expect(await admin.hlen(retryWaitsKey(stream, 'nest'))).toBe(1);
    expect(await admin.zcard(consumerBeatsKey(stream, 'nest'))).toBe(1);

    const indicator = new RedisStreamsHealthIndicator(new HealthIndicatorService());
    const ready = await indicator.isReady('streams', server, { maxDeadLetters: 10 });
    expect(ready.streams.status).toBe('up');
    expect((await indicator.isLive('streams', server)).streams.status).toBe('up');
    await metrics.sampleNow();
    const memory = await registry.getSingleMetric('redis_streams_redis_memory_used_bytes')!.get();
    expect(memory.values[0].value).toBeGreaterThan(0);
    const xadds = await registry.getSingleMetric('redis_streams_xadd_duration_seconds')!.get();
    expect(
      xadds.values.find((v) => (v as { metricName?: string }).metricName?.endsWith('_count') && v.labels.stream === stream)
        ?.value,
    ).toBe(5);

    // The operator: figures, dead letters (list, redrive), safe trimming.
    const operator = redisClient(urlOf('operator'));
    closers.push(() => operator.quit());
    const stats = await collectStreamStats(operator, stream, 'nest', deadLetterStream);
    expect(stats).toMatchObject({ stream, group: 'nest', pending: 0, deadLetters: 1 });
    const dlq = new DeadLetterService(operator);
    const page = await dlq.list(deadLetterStream);
    expect(page.items).toHaveLength(1);
    const attempts = badAttempts;
    await expect(dlq.redrive(deadLetterStream, page.items[0].id)).resolves.toEqual(expect.any(String));
    await waitFor(() => badAttempts > attempts, 'the re-driven entry delivered again');
    await expect(trimSafely(operator, stream, { maxLen: 0 })).resolves.toBeDefined();
  });

  it("let the operator run the CLI's status and every action of the console's operations layer", async () => {
    const stream = `app:${unique('acl-ops')}`;
    const deadLetterStream = `${stream}:dlq`;
    // State as a running service leaves it: entries pending with two consumers, one dead letter.
    await admin.xgroup('CREATE', stream, 'nest', '0', 'MKSTREAM');
    const ids: string[] = [];
    for (let n = 0; n < 6; n++) ids.push((await admin.xadd(stream, '*', 'n', String(n)))!);
    await admin.xreadgroup('GROUP', 'nest', 'pod-a', 'COUNT', 3, 'STREAMS', stream, '>');
    await admin.xreadgroup('GROUP', 'nest', 'pod-b', 'COUNT', 2, 'STREAMS', stream, '>');
    await admin.xadd(deadLetterStream, '*', 'stream', stream, 'group', 'nest', 'id', ids[5], 'reason', 'handler-error', 'n', '5');

    const operator = redisClient(urlOf('operator'));
    closers.push(() => operator.quit());
    const ops = new StreamOperations(operator, { streams: [stream] });
    const actor = 'acl-test';
    const [overview] = await ops.overview();
    expect(overview).toMatchObject({ stream, length: 6 });
    expect((await ops.pending(stream, 'nest')).items).toHaveLength(5);
    expect((await ops.entries(stream)).items).toHaveLength(6);
    expect((await ops.consumers(stream, 'nest')).map((c) => c.name).sort()).toEqual(['pod-a', 'pod-b']);
    await expect(ops.ownership(stream, 'nest')).resolves.toBeDefined();
    await expect(ops.entry(stream, ids[0], 'nest')).resolves.toMatchObject({ id: ids[0] });
    await ops.ack(actor, stream, 'nest', ids[0]);
    await ops.claim(actor, stream, 'nest', ids[1], 'pod-b');
    await ops.park(actor, stream, 'nest', ids[2]);
    const dead = await ops.listDeadLetters(stream);
    expect(dead.items.length).toBe(2);
    await expect(ops.tallyDeadLetters(stream)).resolves.toBeDefined();
    await ops.discard(actor, stream, dead.items[0].id);
    await ops.redrive(actor, stream, dead.items[1].id);
    await ops.handOver(actor, stream, 'nest', 'pod-a', 'pod-b');
    await ops.deleteConsumer(actor, stream, 'nest', 'pod-a');
    await expect(ops.previewCursor(stream, 'nest', { end: true })).resolves.toMatchObject({ stream, group: 'nest' });
    await ops.setCursor(actor, stream, 'nest', { end: true }, true);
    await ops.trim(actor, stream, { maxLen: 100 });
    // A delayed entry (admin stands in for a producer): listed and cancelled.
    await scheduleEntry(admin, stream, 'later-1', Date.now() + 60_000, '', ['*'], ['data', '{}']);
    await expect(ops.scheduled(stream)).resolves.toMatchObject({ count: 1, entries: [{ member: 'later-1' }] });
    await ops.cancelScheduled(actor, stream, 'later-1');
    const audit = await ops.auditTrail();
    expect(audit.items.map((r) => r.action)).toEqual(
      expect.arrayContaining([
        'ack',
        'claim',
        'park',
        'dlq.discard',
        'dlq.redrive',
        'consumer.hand-over',
        'consumer.delete',
        'setid',
        'trim',
        'schedule.cancel',
      ]),
    );
    expect(audit.items.filter((r) => !r.ok)).toEqual([]);

    // The command-line tool, as operators run it (the built package's bin), finding the streams with SCAN.
    const cli = 'libs/nest-redis-streams/dist/cli/main.js';
    if (!existsSync(cli)) throw new Error(`${cli} is missing: build the library first (node scripts/build-lib.mjs).`);
    const status = spawnSync(process.execPath, [cli, 'status', '--url', urlOf('operator')], {
      encoding: 'utf8',
    });
    expect(status.stderr).toBe('');
    expect(status.status).toBe(0);
    expect(status.stdout).toContain(stream);
    expect(status.stdout).not.toContain(PASSWORDS.operator);
  });

  it('let the operator run a canary re-drive to its end (claim, progress, audit) while the consumer role runs the handler', async () => {
    const stream = `app:${unique('acl-canary')}`;
    await arrangeDeadLetters(admin, stream, 4);
    await canaryConsumer(closers, stream, () => false, urlOf('consumer'));
    const operator = redisClient(urlOf('operator'));
    closers.push(() => operator.quit());
    const ops = new StreamOperations(operator, { streams: [stream] });
    const { done } = await ops.canaries.start('acl-test', stream, { cause: CANARY_CAUSE, canary: 2, ratePerSec: 50 });
    await expect(done).resolves.toMatchObject({ state: 'done', redriven: 4, failedAgain: 0 });
    const actions = (await ops.auditTrail()).items.filter((r) => r.stream === stream).map((r) => r.action);
    expect(actions).toEqual(expect.arrayContaining(['dlq.canary.start', 'dlq.canary.done']));
  });

  it("let KEDA's user read what its redis-streams scaler reads, and change nothing", async () => {
    const stream = `app:${unique('acl-keda')}`;
    await admin.xgroup('CREATE', stream, 'billing', '0', 'MKSTREAM');
    await admin.xadd(stream, '*', 'n', '1');
    await admin.xreadgroup('GROUP', 'billing', 'pod-1', 'STREAMS', stream, '>');
    await admin.xadd(stream, '*', 'n', '2');
    const keda = redisClient(urlOf('keda'));
    closers.push(() => keda.quit());
    expect((await keda.xpending(stream, 'billing'))[0]).toBe(1);
    const [group] = (await keda.xinfo('GROUPS', stream)) as unknown[][];
    expect(group[group.indexOf('lag') + 1]).toBe(1);
    expect(await keda.xlen(stream)).toBe(2);
    const [id] = (await admin.xrange(stream, '-', '+', 'COUNT', 1))[0];
    const writes: Array<() => Promise<unknown>> = [
      () => keda.xack(stream, 'billing', id),
      () => keda.xadd(stream, '*', 'n', '3'),
      () => keda.xdel(stream, id),
      () => keda.xgroup('SETID', stream, 'billing', '$'),
      () => keda.xclaim(stream, 'billing', 'pod-2', 0, id),
      () => keda.xtrim(stream, 'MAXLEN', 0),
      () => keda.del(stream),
    ];
    for (const write of writes) await expect(write()).rejects.toThrow(/NOPERM/);
    expect(await admin.xlen(stream)).toBe(2);
    expect((await admin.xpending(stream, 'billing'))[0]).toBe(1);
  });

  it('refuse what a role lacks naming the command, and the hint names the ACL line that fixes it', async () => {
    const url = urlOf('producer');
    const producer = redisClient(url);
    closers.push(() => producer.quit());
    const stream = `app:${unique('acl-refused')}`;
    await admin.xgroup('CREATE', stream, 'nest', '$', 'MKSTREAM');
    const readGroup = () => producer.xreadgroup('GROUP', 'nest', 'x', 'STREAMS', stream, '>');
    const refused = await readGroup().catch((err: Error) => err);
    expect((refused as Error).message).toMatch(/NOPERM .*no permissions to run the 'xreadgroup' command/);
    const fix = aclFixFor(refused, aclUserOf(url));
    expect(fix).toBe('ACL SETUSER nrs-producer +xreadgroup');
    expect(explainAclError(refused, aclUserOf(url))).toContain('grant it with `ACL SETUSER nrs-producer +xreadgroup`');
    // The line is the fix: after it, the same command runs.
    await admin.call('ACL', ...fix!.split(' ').slice(1));
    await expect(readGroup()).resolves.toBeNull();

    const outside = await producer.xadd('other:stream', '*', 'a', '1').catch((err: Error) => err);
    expect((outside as Error).message).toMatch(/NOPERM .*key/);
    expect(aclFixFor(outside, 'nrs-producer')).toMatch(/^ACL SETUSER nrs-producer ~<keyPrefix>\*/);
  });

  it("make the client's own error name the refused command and the ACL line that grants it", async () => {
    // A producer whose role lacks XADD: its emit is refused by Redis.
    await admin.call(
      'ACL',
      'SETUSER',
      'nrs-no-xadd',
      'on',
      '>no-xadd-secret',
      'resetkeys',
      '~app:*',
      'resetchannels',
      '-@all',
      '+@read',
      '+ping',
      '+hello',
      '+client|setname',
      '+info',
    );
    const client = new RedisStreamsClient({
      connection: `redis://nrs-no-xadd:no-xadd-secret@127.0.0.1:${redisProcess.port}`,
      keyPrefix: 'app:',
    });
    closers.push(() => client.close());
    await client.connect();
    const refused = await lastValueFrom(client.emit(unique('acl-emit'), { n: 1 })).catch((err: Error) => err);
    expect(refused).toBeInstanceOf(PublishFailedError);
    expect((refused as Error).message).toMatch(/no permissions to run the 'xadd' command/);
    expect((refused as Error).message).toContain('grant it with `ACL SETUSER nrs-no-xadd +xadd`');
    expect((refused as Error).message).not.toContain('no-xadd-secret');
  });

  it('make listen() fail naming the commands its group-creation script needs and the ACL line when the role lacks one', async () => {
    // The README consumer role, less XGROUP CREATE: the server cannot create its group.
    const lines = readmeAclLines({ ...PASSWORDS, consumer: 'lacking-secret' });
    const [, ...consumerLine] = lines[0];
    await admin.call('ACL', ...consumerLine.map((arg) => (arg === 'nrs-consumer' ? 'nrs-lacking' : arg)), '-xgroup|create');
    const stream = `app:${unique('acl-listen')}`;
    @Controller()
    class Handler {
      @EventPattern(stream)
      handle() {}
    }
    const failure = await startMicroservice([Handler], {
      connection: `redis://nrs-lacking:lacking-secret@127.0.0.1:${redisProcess.port}`,
    }).catch((err: unknown) => err);
    expect((failure as Error).message).toMatch(/needs EXISTS, XINFO STREAM, XGROUP CREATE/);
    expect((failure as Error).message).toContain(
      'Grant them with `ACL SETUSER nrs-lacking +exists +xinfo|stream +xgroup|create +hexists +hincrby +hset +time`',
    );
    expect((failure as Error).message).not.toContain('lacking-secret');
  });
});
