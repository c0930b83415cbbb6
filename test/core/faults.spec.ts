import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { Redis } from 'ioredis';
import { DLQ_FIELDS, RedisStreamsContext, RedisStreamsServer, RedisStreamsStatus } from 'nest-redis-streams';
import {
  pendingCount,
  readAll,
  redisUrl,
  startMicroservice,
  unique,
  waitFor,
  testContext,
  startRecorder,
} from '../support/helpers.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startRedis } = require('../../scripts/lib/redis-process.cjs');

describe('faults the read loop survives', () => {
  const { redis, closers } = testContext();

  it('replays its own pending entries after a restart, before new ones, with the delivery count raised', async () => {
    const stream = unique('replay');
    const consumer = unique('pod');
    const firstRun: string[] = [];
    @Controller()
    class Hanging {
      @EventPattern(stream, { concurrency: 5 })
      handle(@Payload() data: { n: string }) {
        firstRun.push(data.n);
        return new Promise(() => undefined); // a handler that never finishes: the process "dies" with it
      }
    }
    const old: string[] = [];
    for (const n of ['a', 'b', 'c']) old.push((await redis.xadd(stream, '*', 'n', n))!);
    const first = await startMicroservice([Hanging], { consumer, reclaimIntervalMs: 0, shutdownTimeoutMs: 50 });
    await waitFor(() => firstRun.length === 3, 'three entries in flight');
    await first.app.close();
    expect(await pendingCount(redis, stream, 'nest')).toBe(3);
    const fresh = await redis.xadd(stream, '*', 'n', 'd');

    const secondRun: Array<[string, number]> = [];
    @Controller()
    class Recording {
      @EventPattern(stream)
      handle(@Ctx() ctx: RedisStreamsContext) {
        secondRun.push([ctx.getEntryId(), ctx.getDeliveryCount()]);
      }
    }
    const second = await startMicroservice([Recording], { consumer, reclaimIntervalMs: 0 });
    closers.push(() => second.app.close());
    await waitFor(() => secondRun.length === 4, 'the replay and the new entry');
    expect(secondRun).toEqual([
      [old[0], 2],
      [old[1], 2],
      [old[2], 2],
      [fresh, 1],
    ]);
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 0, 'all acked');
  });

  it('parks an undecodable entry in the dead-letter stream at once and keeps reading', async () => {
    const stream = unique('undecodable');
    const { seen } = await startRecorder(closers, stream);
    const bad = await redis.xadd(stream, '*', 'v', 'nrs/1', 'event_id', 'e1', 'data', '{not json');
    await redis.xadd(stream, '*', 'v', 'nrs/1', 'event_id', 'e2', 'data', '{"ok":true}');
    await waitFor(() => seen.length === 1, 'the good entry');
    expect(seen).toEqual([{ ok: true }]);
    const [[, record]] = await waitFor(async () => {
      const entries = await readAll(redis, `${stream}:dlq`);
      return entries.length === 1 ? entries : null;
    }, 'the dead letter');
    expect(record[DLQ_FIELDS.reason]).toBe('undecodable');
    expect(record[DLQ_FIELDS.id]).toBe(bad);
    expect(record[DLQ_FIELDS.error]).toMatch(/could not be deserialized/);
    expect(record.data).toBe('{not json');
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 0, 'nothing pending');
  });

  it('re-creates the group and goes on when the stream is deleted mid-run', async () => {
    const stream = unique('deleted');
    const { seen } = await startRecorder<{ n: string }>(closers, stream);
    await redis.xadd(stream, '*', 'n', 'before');
    await waitFor(() => seen.length === 1, 'the first entry');
    await redis.del(stream);
    await redis.xadd(stream, '*', 'n', 'after');
    await waitFor(() => seen.length === 2, 'the entry written after the DEL');
    expect(seen.map((d) => d.n)).toEqual(['before', 'after']);
  });

  it('replays entries left pending under its name by a read whose reply was lost with the connection', async () => {
    const stream = unique('lost-reply');
    const consumer = unique('pod');
    const { seen } = await startRecorder<{ n: string }>(closers, stream, {
      consumer,
      reclaimIntervalMs: 0,
      minIdleTimeMs: 60_000,
    });
    // Drop the reader's connection; while it reconnects, a read under its name takes an entry
    // whose reply never reaches it (what a Redis crash or CLIENT KILL mid-reply leaves behind).
    const clients = String(await redis.call('CLIENT', 'LIST')).split('\n');
    const reader = clients.find((line) => line.includes(`name=nrs:reader:${stream}:nest `));
    await redis.call('CLIENT', 'KILL', 'ID', /\bid=(\d+)/.exec(reader!)![1]);
    await redis.xadd(stream, '*', 'n', 'orphan');
    await redis.xreadgroup('GROUP', 'nest', consumer, 'COUNT', 1, 'STREAMS', stream, '>');
    await waitFor(() => seen.length === 1, 'the orphaned entry, long before min-idle (60 s) would free it', 10_000);
    expect(seen).toEqual([{ n: 'orphan' }]);
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 0, 'the ack');
  });

  it('fails listen() with a message naming a wrong option', async () => {
    const stream = unique('options');
    @Controller()
    class Handlers {
      @EventPattern(stream, { concurrency: 0 })
      handle() {}
    }
    await expect(startMicroservice([Handlers], {})).rejects.toThrow(
      `Option "concurrency" must be a positive integer for stream "${stream}", got 0.`,
    );
  });

  it('fails listen() with a clear message when Redis cannot be reached', async () => {
    @Controller()
    class Handlers {
      @EventPattern(unique('nowhere'))
      handle() {}
    }
    await expect(startMicroservice([Handlers], { connection: 'redis://127.0.0.1:1' })).rejects.toThrow(
      /Could not reach Redis at redis:\/\/127\.0\.0\.1:1 .*REDIS_URL/,
    );
  }, 20_000);

  it('fails listen() naming the database when the server has no such database (ioredis would go on in database 0)', async () => {
    @Controller()
    class Handlers {
      @EventPattern(unique('db99'))
      handle() {}
    }
    const url = `${redisUrl().replace(/\/\d*$/, '')}/99`;
    await expect(startMicroservice([Handlers], { connection: url })).rejects.toThrow(
      `Redis at ${url} refused database 99 (ERR DB index is out of range): ioredis would go on in database 0, another app's keys.`,
    );
  }, 20_000);

  it('names this instance after the host, not a random id or a pid', () => {
    const server = new RedisStreamsServer({});
    expect(server.options.consumer).toBe(process.env.HOSTNAME || require('node:os').hostname());
  });

  it('keeps consuming across a Redis kill and restart, losing nothing', async () => {
    const own = await startRedis({ appendonly: true, appendfsync: 'always' });
    closers.push(() => own.stop());
    const producer = new Redis(own.url, { maxRetriesPerRequest: null });
    closers.push(() => producer.quit().catch(() => producer.disconnect()));
    const stream = unique('restart');
    const seen = new Set<string>();
    const statuses: string[] = [];
    @Controller()
    class Handlers {
      @EventPattern(stream, { concurrency: 4 })
      handle(@Payload() data: { n: string }) {
        seen.add(data.n);
      }
    }
    const { app, server } = await startMicroservice([Handlers], { connection: own.url });
    closers.push(() => app.close());
    server.status.subscribe((s) => statuses.push(s));
    for (let i = 0; i < 100; i++) await producer.xadd(stream, '*', 'n', String(i));
    await waitFor(() => seen.size >= 50, 'some entries before the crash');
    await own.kill('SIGKILL');
    await own.start();
    for (let i = 100; i < 200; i++) await producer.xadd(stream, '*', 'n', String(i));
    await waitFor(() => seen.size === 200, 'all 200 entries', 30_000);
    expect(statuses).toEqual(expect.arrayContaining([RedisStreamsStatus.RECONNECTING, RedisStreamsStatus.CONNECTED]));
    await waitFor(async () => (await pendingCount(producer, stream, 'nest')) === 0, 'every entry acked', 20_000);
  }, 60_000);

  it('leaves no finished-but-unacked entry behind when closed under load', async () => {
    const stream = unique('close');
    const finished = new Set<string>();
    @Controller()
    class Handlers {
      @EventPattern(stream, { concurrency: 8 })
      async handle(@Ctx() ctx: RedisStreamsContext) {
        await new Promise((r) => setTimeout(r, 2));
        finished.add(ctx.getEntryId());
      }
    }
    const pipeline = redis.pipeline();
    for (let i = 0; i < 2000; i++) pipeline.xadd(stream, '*', 'i', String(i));
    await pipeline.exec();
    const { app } = await startMicroservice([Handlers], { reclaimIntervalMs: 0 });
    await waitFor(() => finished.size >= 100, 'the load to be under way');
    await app.close();
    const pending = (await redis.xpending(stream, 'nest', '-', '+', 5000)) as Array<[string]>;
    const finishedButPending = pending.filter(([id]) => finished.has(id));
    expect(finishedButPending).toEqual([]);
    expect(finished.size).toBeLessThan(2000);
  });
});
