import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import { InvalidDelayError, RedisStreamsContext, RedisStreamsClient, ScheduleMover, StreamRecord } from 'nest-redis-streams';
import { clientContext } from '../client/client-fixture.js';
import { redisClient, startMicroservice, unique, waitFor } from '../support/helpers.js';
import { scheduleKeysOf } from '../../libs/nest-redis-streams/src/keys/index.js';
import { probeCapabilities } from '../../libs/nest-redis-streams/src/redis/capabilities.js';
import { scheduleEntry, summarizeSchedule } from '../../libs/nest-redis-streams/src/schedule/index.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startRedis } = require('../../scripts/lib/redis-process.cjs') as {
  startRedis(options?: { appendonly?: boolean; appendfsync?: string }): Promise<{
    url: string;
    restart(): Promise<void>;
    stop(): Promise<void>;
  }>;
};

const silent = { warn: () => undefined, log: () => undefined };

/** A consumer of `stream` recording each payload with the time it arrived and its event id. */
function arrivalsController(stream: string, seen: Array<{ data: unknown; at: number; eventId?: string }>) {
  @Controller()
  class Arrivals {
    @EventPattern(stream)
    handle(@Payload() data: unknown, @Ctx() ctx: RedisStreamsContext) {
      seen.push({ data, at: Date.now(), eventId: ctx.getEventId() });
    }
  }
  return Arrivals;
}

// Waits are bounded by the conditions they wait for; a busy machine needs more than Jest's 5 s.
jest.setTimeout(30_000);

describe('Delayed emit', () => {
  const { redis, closers, client } = clientContext();

  it('holds the entry in the stream schedule and delivers it once, not before it is due', async () => {
    const stream = unique('delay');
    const seen: Array<{ data: unknown; at: number; eventId?: string }> = [];
    const { app } = await startMicroservice([arrivalsController(stream, seen)], { scheduleCheckMs: 100 });
    closers.push(() => app.close());

    const sentAt = Date.now();
    const eventId = await lastValueFrom(client().emit(stream, { n: 1 }, { delayMs: 700 }));

    expect(eventId).toMatch(/^[0-9a-f-]{36}$/);
    expect(await redis.xlen(stream)).toBe(0);
    expect(await redis.zscore(scheduleKeysOf(stream).due, eventId)).not.toBeNull();
    await waitFor(() => seen.length === 1, 'the delayed entry to arrive');
    expect(seen[0].at - sentAt).toBeGreaterThanOrEqual(700);
    expect(seen[0]).toMatchObject({ data: { n: 1 }, eventId });
    // Moved once: the schedule is empty and another mover finds nothing to move.
    const again = new ScheduleMover(redis, [stream], { checkMs: 1_000, batch: 10, idmp: false }, silent);
    expect(await again.moveNow(stream)).toEqual({ moved: 0, nextDueAt: null });
    expect(await redis.xlen(stream)).toBe(1);
    expect(await redis.exists(scheduleKeysOf(stream).due, scheduleKeysOf(stream).entries)).toBe(0);
  });

  it("keeps a record's event id, headers and partition, and accepts deliverAt in its options", async () => {
    const stream = unique('delay-record');
    const producer = client({ partitions: { [stream]: 4 } });
    const deliverAt = new Date(Date.now() + 60_000);
    const record = new StreamRecord(
      { n: 2 },
      { eventId: 'order-2-remind', headers: { tenant: 'acme' }, partitionKey: 'k-9', deliverAt },
    );
    const id = await lastValueFrom(producer.emit(stream, record));

    expect(id).toBe('order-2-remind');
    const partition = producer.streamFor({ pattern: stream, data: record });
    const summary = await summarizeSchedule(redis, partition);
    expect(summary).toMatchObject({ count: 1, nextDueAt: deliverAt.getTime(), oldestOverdueMs: 0 });
    const fields = summary.entries[0].fields;
    expect(fields).toEqual(expect.arrayContaining(['event_id', 'order-2-remind', 'headers', '{"tenant":"acme"}']));
    expect(await producer.cancelScheduled(stream, 'order-2-remind')).toBe(true);
  });

  it('moves an explicit event id with XADD IDMP where every node has it: a copy already in the stream is not added twice', async () => {
    const stream = unique('delay-idmp');
    const caps = await probeCapabilities(redis, unique('idmp-probe'));
    const producer = client();
    // The second event id's member has nrs:emit: before it: the mover still adds it under its event id.
    for (const eventId of ['pay-1', 'nrs:pay-2']) {
      await lastValueFrom(producer.emit(stream, new StreamRecord({ n: 1 }, { eventId })));
      await lastValueFrom(producer.emit(stream, new StreamRecord({ n: 1 }, { eventId, delayMs: 20 })));
    }
    const allDue = async () => {
      const { entries, serverTime } = await summarizeSchedule(redis, stream);
      return entries.length === 2 && entries.every((e) => e.dueAt <= serverTime);
    };
    await waitFor(allDue, 'the entries to come due', 5_000);
    const mover = new ScheduleMover(redis, [stream], { checkMs: 1_000, batch: 10, idmp: caps.all.idmp }, silent);

    expect((await mover.moveNow(stream)).moved).toBe(2);

    // With IDMP (Redis 8.6+) the stream drops the copies; elsewhere the consumers' inbox absorbs them.
    expect(await redis.xlen(stream)).toBe(caps.all.idmp ? 2 : 4);
  });

  it('cancels a scheduled entry by its event id, once', async () => {
    const stream = unique('delay-cancel');
    const producer = client();
    const eventId = await lastValueFrom(producer.emit(stream, { n: 3 }, { delayMs: 60_000 }));

    expect(await producer.cancelScheduled(stream, eventId)).toBe(true);
    expect(await producer.cancelScheduled(stream, eventId)).toBe(false);
    expect(await summarizeSchedule(redis, stream)).toMatchObject({ count: 0, nextDueAt: null });
    const mover = new ScheduleMover(redis, [stream], { checkMs: 1_000, batch: 10, idmp: false }, silent);
    expect((await mover.moveNow(stream)).moved).toBe(0);
  });

  it('writes at once for a delay of 0 or a deliverAt already past', async () => {
    const stream = unique('delay-now');
    const producer = client();
    const first = await lastValueFrom(producer.emit(stream, { n: 4 }, { delayMs: 0 }));
    const second = await lastValueFrom(producer.emit(stream, { n: 5 }, { deliverAt: new Date(Date.now() - 5_000) }));

    expect(first).toMatch(/^\d+-\d+$/);
    expect(second).toMatch(/^\d+-\d+$/);
    expect(await redis.xlen(stream)).toBe(2);
    expect(await redis.exists(scheduleKeysOf(stream).due)).toBe(0);
  });

  it.each([
    [{ delayMs: -1 }, /delayMs must be a number of milliseconds from 0 to \d+, got -1/],
    [{ delayMs: Number.NaN }, /delayMs must be .* got null/],
    [{ delayMs: '5000' as unknown as number }, /delayMs must be .* got "5000"/],
    [{ deliverAt: new Date('not a date') }, /deliverAt must be a valid Date .* got Date\(NaN\)/],
    [{ delayMs: 10, deliverAt: Date.now() + 10 }, /give delayMs or deliverAt, not both/],
    [
      5000 as unknown as { delayMs: number },
      /third argument .* must be an object, \{ delayMs \} or \{ deliverAt \}, got number 5000/,
    ],
  ])('refuses %p naming the value and the fix, and writes nothing', async (delivery, message) => {
    const stream = unique('delay-bad');
    const error = await lastValueFrom(client().emit(stream, { n: 6 }, delivery)).catch((err: unknown) => err);

    expect(error).toBeInstanceOf(InvalidDelayError);
    expect((error as Error).message).toMatch(message);
    expect(await redis.exists(stream, scheduleKeysOf(stream).due)).toBe(0);
  });

  it('refuses a delayed entry in emitBatch(), saying to use emit()', async () => {
    const stream = unique('delay-batch');
    const producer = client();
    const batch = (await lastValueFrom(producer.emitBatch(stream, [{ n: 1 }, new StreamRecord({ n: 2 }, { delayMs: 50 })])).catch(
      (err: unknown) => err as Error,
    )) as Error;
    expect(batch.message).toMatch(/Entry #1 asks for delayed delivery .* Emit delayed entries one by one with emit\(\)/);
    expect(await redis.exists(stream)).toBe(0);
  });

  it('refuses a delayed request in send(), saying to use emit()', async () => {
    const stream = unique('delay-send');
    await redis.xgroup('CREATE', stream, 'nest', '$', 'MKSTREAM');
    const error = (await lastValueFrom(client().send(stream, new StreamRecord({ n: 1 }, { delayMs: 50 }))).catch(
      (err: unknown) => err,
    )) as Error;

    expect(error.message).toMatch(/send\(\) to stream ".*" cannot be delayed .* Use emit\(\) for delayed delivery/);
    expect(await redis.xlen(stream)).toBe(0);
  });

  it('two movers racing over one schedule move every entry exactly once', async () => {
    const stream = unique('delay-race');
    const producer = client();
    const ids = await Promise.all(
      Array.from({ length: 300 }, (_, n) => lastValueFrom(producer.emit(stream, { n }, { delayMs: 30 }))),
    );
    const due = Date.now() + 30;
    await waitFor(() => Date.now() > due + 5, 'the entries to come due', 5_000);
    const other = redisClient();
    closers.push(() => other.quit());
    const a = new ScheduleMover(redis, [stream], { checkMs: 1_000, batch: 7, idmp: false }, silent);
    const b = new ScheduleMover(other, [stream], { checkMs: 1_000, batch: 7, idmp: false }, silent);

    const [movedA, movedB] = await Promise.all([a.moveNow(stream), b.moveNow(stream)]);

    expect(movedA.moved + movedB.moved).toBe(300);
    const entries = await redis.xrange(stream, '-', '+');
    const eventIds = entries.map(([, fields]) => fields[fields.indexOf('event_id') + 1]);
    expect(new Set(eventIds).size).toBe(300);
    expect(new Set(eventIds)).toEqual(new Set(ids));
  });

  it('a failing XADD stops the move: what was added is unscheduled, the failed entry stays for the next round', async () => {
    const stream = unique('delay-wrongtype');
    await scheduleEntry(redis, stream, 'first', Date.now() - 2_000, '', ['*'], ['v', 'nrs/1', 'event_id', 'first', 'data', '1']);
    await scheduleEntry(redis, stream, 'second', Date.now() - 1_000, '', ['MAXLEN', 'nope', '*'], ['data', '2']);
    await scheduleEntry(redis, stream, 'third', Date.now() - 500, '', ['*'], ['data', '3']);
    const mover = new ScheduleMover(redis, [stream], { checkMs: 1_000, batch: 10, idmp: false }, silent);

    await expect(mover.moveNow(stream)).rejects.toThrow(/value is not an integer/);

    expect(await redis.xlen(stream)).toBe(1);
    expect((await summarizeSchedule(redis, stream)).entries.map((e) => e.member)).toEqual(['second', 'third']);
  });

  it('survives a consumer closed before the entry is due: another instance moves and handles it', async () => {
    const stream = unique('delay-restart');
    const seenA: Array<{ data: unknown; at: number }> = [];
    const seenB: Array<{ data: unknown; at: number }> = [];
    const a = await startMicroservice([arrivalsController(stream, seenA)], { scheduleCheckMs: 100, consumer: 'a' });
    await lastValueFrom(client().emit(stream, { n: 7 }, { delayMs: 800 }));
    await a.app.close();

    const b = await startMicroservice([arrivalsController(stream, seenB)], { scheduleCheckMs: 100, consumer: 'b' });
    closers.push(() => b.app.close());

    await waitFor(() => seenB.length === 1, 'instance b to move and handle the entry');
    expect(seenA).toEqual([]);
    expect(seenB[0].data).toEqual({ n: 7 });
  });
});

describe('Delayed emit across a Redis restart', () => {
  it('keeps the schedule through a hard restart (AOF) and delivers afterwards', async () => {
    const own = await startRedis({ appendonly: true, appendfsync: 'always' });
    const stream = unique('delay-redis-restart');
    const producer = new RedisStreamsClient({ connection: own.url });
    const seen: Array<{ data: unknown; at: number }> = [];
    try {
      await lastValueFrom(producer.emit(stream, { n: 8 }, { delayMs: 1_500 }));
      await producer.close();
      await own.restart();
      const { app } = await startMicroservice([arrivalsController(stream, seen)], { connection: own.url, scheduleCheckMs: 100 });
      try {
        await waitFor(() => seen.length === 1, 'the entry scheduled before the restart to arrive');
        expect(seen[0].data).toEqual({ n: 8 });
      } finally {
        await app.close();
      }
    } finally {
      await producer.close();
      await own.stop();
    }
  });
});
