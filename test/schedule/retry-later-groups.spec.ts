import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import { ENVELOPE, RedisStreamsContext, ScheduleMover, StreamOperations, StreamRecord } from 'nest-redis-streams';
import { clientContext } from '../client/client-fixture.js';
import { pendingCount, startMicroservice, unique, waitFor } from '../support/helpers.js';
import { retryMember } from '../../libs/nest-redis-streams/src/keys/index.js';
import { rescheduleIfOwned, scheduleEntry, summarizeSchedule } from '../../libs/nest-redis-streams/src/schedule/index.js';

const silent = { warn: () => undefined, log: () => undefined };

/** A handler in `group` that asks for a long retry on the first run of each payload, and records every run. */
function retryOnceIn(stream: string, group: string, runs: string[], delayMs: number) {
  @Controller()
  class RetryOnce {
    @EventPattern(stream, { group })
    handle(@Payload() data: { n: number }, @Ctx() ctx: RedisStreamsContext) {
      const run = `${group}:${data.n}`;
      runs.push(run);
      if (runs.filter((r) => r === run).length === 1) ctx.retryLater(delayMs);
    }
  }
  return RetryOnce;
}

// Waits are bounded by the conditions they wait for; a busy machine needs more than Jest's 5 s.
jest.setTimeout(30_000);

describe('the schedule keeps one copy per entry and group', () => {
  const { redis, closers, client } = clientContext();

  it('two groups retrying the same entries past minIdleTimeMs (with an event id and without) each run their own copy', async () => {
    const stream = unique('retry-groups');
    const runs: string[] = [];
    // The mover is off: the copies wait in the schedule until this test moves them.
    const { app } = await startMicroservice([retryOnceIn(stream, 'a', runs, 1_500), retryOnceIn(stream, 'b', runs, 1_500)], {
      reclaimIntervalMs: 100,
      minIdleTimeMs: 500,
      scheduleCheckMs: 0,
    });
    closers.push(() => app.close());
    const withId = await redis.xadd(stream, '*', 'v', 'nrs/1', 'event_id', 'e-1', 'data', '{"n":1}');
    const withoutId = await redis.xadd(stream, '*', 'v', 'nrs/1', 'data', '{"n":2}');

    await waitFor(async () => (await summarizeSchedule(redis, stream)).count === 4, 'a copy per entry and group');
    const listed = (await summarizeSchedule(redis, stream)).entries;
    expect(listed.map((e) => [e.member, e.eventId, e.group]).sort()).toEqual(
      [
        [retryMember(withId!, 'a'), 'e-1', 'a'],
        [retryMember(withId!, 'b'), 'e-1', 'b'],
        [retryMember(withoutId!, 'a'), null, 'a'],
        [retryMember(withoutId!, 'b'), null, 'b'],
      ].sort(),
    );
    expect(await pendingCount(redis, stream, 'a')).toBe(0);
    expect(await pendingCount(redis, stream, 'b')).toBe(0);
    // Cancelling one group's copy leaves the other group's.
    const ops = new StreamOperations(redis);
    expect(await ops.cancelScheduled('tester', stream, retryMember(withoutId!, 'b'))).toEqual({
      cancelled: retryMember(withoutId!, 'b'),
    });

    const allDue = async () => {
      const { entries, serverTime } = await summarizeSchedule(redis, stream);
      return entries.every((e) => e.dueAt <= serverTime);
    };
    await waitFor(allDue, 'the copies to come due', 5_000);
    const mover = new ScheduleMover(redis, [stream], { checkMs: 1_000, batch: 10, idmp: false }, silent);
    expect((await mover.moveNow(stream)).moved).toBe(3);

    await waitFor(() => runs.length === 7, 'the three copies to run');
    await waitFor(
      async () => (await pendingCount(redis, stream, 'a')) + (await pendingCount(redis, stream, 'b')) === 0,
      'the acks',
    );
    expect(runs.slice().sort()).toEqual(['a:1', 'a:1', 'a:2', 'a:2', 'b:1', 'b:1', 'b:2']);
    expect((await summarizeSchedule(redis, stream)).count).toBe(0);
  });

  it('a delayed emit keeps its event-id dedupe, and no event id can replace or cancel a RetryLater copy', async () => {
    const stream = unique('members');
    const producer = client();
    await redis.xgroup('CREATE', stream, 'g', '$', 'MKSTREAM');
    const id = await redis.xadd(stream, '*', 'v', 'nrs/1', 'event_id', 'e-2', 'data', '{}');
    await redis.xreadgroup('GROUP', 'g', 'c', 'STREAMS', stream, '>');
    const target = { stream, group: 'g', consumer: 'c' };
    const copy = await rescheduleIfOwned(redis, target, id!, { inMs: 60_000 }, ENVELOPE);
    expect(copy).toBe(retryMember(id!, 'g'));

    // A retried emit schedules one entry; an event id spelled like the copy's member is an entry of its own.
    const record = (eventId: string) => new StreamRecord({ eventId }, { eventId, delayMs: 60_000 });
    await lastValueFrom(producer.emit(stream, record('dup')));
    await lastValueFrom(producer.emit(stream, record('dup')));
    await lastValueFrom(producer.emit(stream, record(copy as string)));
    const summary = await summarizeSchedule(redis, stream);
    expect(summary.count).toBe(3);
    expect(summary.entries.filter((e) => e.eventId === 'dup')).toHaveLength(1);
    expect(summary.entries.find((e) => e.member === copy)).toMatchObject({ eventId: 'e-2', group: 'g' });
    expect(summary.entries.find((e) => e.eventId === copy)).toMatchObject({ member: `nrs:emit:${copy as string}`, group: null });

    expect(await producer.cancelScheduled(stream, copy as string)).toBe(true);
    expect(await producer.cancelScheduled(stream, copy as string)).toBe(false);
    expect((await summarizeSchedule(redis, stream)).entries.map((e) => e.member).sort()).toEqual([copy, 'dup'].sort());
  });

  it('reads, moves and cancels members written before they were per group (an event id, entry:<id>)', async () => {
    const stream = unique('legacy-members');
    const ops = new StreamOperations(redis);
    await redis.xgroup('CREATE', stream, 'g', '$', 'MKSTREAM');
    const copyOf = (extra: string[]) => ['v', 'nrs/1', ...extra, 'data', '{}', ENVELOPE.targetGroup, 'g'];
    await scheduleEntry(redis, stream, 'entry:7-0', Date.now() - 1_000, '', ['*'], copyOf([]));
    await scheduleEntry(redis, stream, 'old-event', Date.now() - 500, '', ['*'], copyOf(['event_id', 'old-event']));
    await scheduleEntry(redis, stream, 'later', Date.now() + 60_000, '', ['*'], copyOf(['event_id', 'later']));

    const listed = (await ops.scheduled(stream)).entries;
    expect(listed.map((e) => [e.member, e.eventId, e.group])).toEqual([
      ['entry:7-0', null, 'g'],
      ['old-event', 'old-event', 'g'],
      ['later', 'later', 'g'],
    ]);
    expect(await ops.cancelScheduled('tester', stream, 'later')).toEqual({ cancelled: 'later' });
    const mover = new ScheduleMover(redis, [stream], { checkMs: 1_000, batch: 10, idmp: false }, silent);
    expect(await mover.moveNow(stream)).toEqual({ moved: 2, nextDueAt: null });
    expect(await redis.xlen(stream)).toBe(2);
  });
});
