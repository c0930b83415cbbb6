import type { Redis } from 'ioredis';
import { ScheduleMover, StreamOperations } from 'nest-redis-streams';
import { runCli } from '../cli/run-cli.js';
import { testContext, unique } from '../support/helpers.js';
import { scheduleKeysOf } from '../../libs/nest-redis-streams/src/keys/index.js';
import { scheduleEntry, summarizeSchedule } from '../../libs/nest-redis-streams/src/schedule/index.js';

/**
 * A schedule with records no producer of this library wrote, all due before two valid entries:
 * bytes that are not MessagePack, MessagePack of another shape, a member with nothing stored.
 */
async function scheduleWithGarbage(redis: Redis, stream: string): Promise<void> {
  const { due, entries } = scheduleKeysOf(stream);
  const past = Date.now() - 10_000;
  await redis.zadd(due, past, 'junk', past + 1, 'wrong-shape', past + 2, 'orphan');
  await redis.hset(entries, 'junk', '\x1b[31mnot msgpack');
  await redis.eval("return redis.call('HSET', KEYS[1], 'wrong-shape', cmsgpack.pack({1, {'x'}}))", 1, entries);
  const envelope = (eventId: string) => ['v', 'nrs/1', 'event_id', eventId, 'data', '{}'];
  await scheduleEntry(redis, stream, 'good-1', past + 3, '', ['*'], envelope('good-1'));
  await scheduleEntry(redis, stream, 'good-2', past + 4, '', ['*'], envelope('good-2'));
}

// Waits are bounded by the conditions they wait for; a busy machine needs more than Jest's 5 s.
jest.setTimeout(60_000);

describe('a schedule record that is not a valid entry', () => {
  const { redis } = testContext();

  it('is set aside by the mover, which moves every valid due entry after it and says which it set aside', async () => {
    const stream = unique('sched-garbage');
    await scheduleWithGarbage(redis, stream);
    const warnings: string[] = [];
    const logger = { warn: (m: string) => warnings.push(m), log: () => undefined };
    // A batch smaller than the garbage: the set-aside records must not use up every round.
    const mover = new ScheduleMover(redis, [stream], { checkMs: 1_000, batch: 2, idmp: false }, logger);

    expect(await mover.moveNow(stream)).toEqual({ moved: 2, nextDueAt: null });

    const added = await redis.xrange(stream, '-', '+');
    expect(added.map(([, f]) => f[f.indexOf('event_id') + 1])).toEqual(['good-1', 'good-2']);
    expect(warnings.join('\n')).toMatch(/Set aside 2 record\(s\) .*"junk", "wrong-shape"/);
    expect(warnings.join('\n')).toMatch(/Set aside 1 record\(s\) .*"orphan".* never added to the stream/);
    const summary = await summarizeSchedule(redis, stream);
    expect(summary).toMatchObject({ count: 3, nextDueAt: null, oldestOverdueMs: 0, entries: [] });
    expect(summary.malformed.count).toBe(3);
    expect(summary.malformed.records.map((r) => r.member).sort()).toEqual(['junk', 'orphan', 'wrong-shape']);
    expect(summary.malformed.records.find((r) => r.member === 'orphan')?.problem).toMatch(/no entry is stored/);
    // Kept byte for byte for an operator to read.
    expect(await redis.hget(scheduleKeysOf(stream).entries, 'junk')).toBe('\x1b[31mnot msgpack');
    expect(await mover.moveNow(stream)).toEqual({ moved: 0, nextDueAt: null });
  });

  it('is listed as malformed by the operations layer and the CLI (exit 0, the member named), and cancel removes it', async () => {
    const stream = unique('sched-garbage-cli');
    await redis.xgroup('CREATE', stream, 'nest', '$', 'MKSTREAM');
    await scheduleWithGarbage(redis, stream);
    const ops = new StreamOperations(redis);

    const before = await ops.scheduled(stream);
    expect(before.entries.map((e) => [e.member, e.malformed ?? 'ok'])).toEqual([
      ['junk', expect.stringMatching(/not an entry this library packed/)],
      ['wrong-shape', expect.stringMatching(/not an entry this library packed/)],
      ['orphan', expect.stringMatching(/no entry is stored under this member/)],
      ['good-1', 'ok'],
      ['good-2', 'ok'],
    ]);
    const table = await runCli(['scheduled', stream]);
    expect([table.code, table.stderr]).toEqual([0, '']);
    expect(table.stdout).toMatch(/junk .*never \(malformed\) .*malformed: its stored value is not an entry/);
    expect(table.stdout).toMatch(/orphan .*malformed: no entry is stored under this member/);
    expect(table.stdout).toMatch(/good-1 .*overdue \d+ ms/);

    const mover = new ScheduleMover(
      redis,
      [stream],
      { checkMs: 1_000, batch: 100, idmp: false },
      { warn: () => undefined, log: () => undefined },
    );
    expect((await mover.moveNow(stream)).moved).toBe(2);
    const aside = await runCli(['scheduled', stream]);
    expect(aside.code).toBe(0);
    expect(aside.stdout).toMatch(/set aside 3 malformed record\(s\)[^\n]*scheduled cancel \S+ <member>\n {2}junk: /);
    const json = await runCli(['scheduled', stream, '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ count: 3, entries: [], malformed: { count: 3 } });
    const cancelled = await runCli(['scheduled', 'cancel', stream, 'junk', 'orphan']);
    expect([cancelled.code, cancelled.stdout]).toEqual([0, 'cancelled junk\ncancelled orphan\n']);
    expect((await ops.scheduled(stream)).malformed).toEqual({
      count: 1,
      records: [{ member: 'wrong-shape', problem: expect.any(String) }],
    });
    expect(await redis.hexists(scheduleKeysOf(stream).entries, 'junk')).toBe(0);
  });

  it('a schedule key of another type: the CLI says which key and exits 3 (refused), not a raw WRONGTYPE', async () => {
    const stream = unique('sched-wrongtype');
    await redis.xgroup('CREATE', stream, 'nest', '$', 'MKSTREAM');
    await redis.set(scheduleKeysOf(stream).due, 'hand-written');

    const run = await runCli(['scheduled', stream]);

    expect(run.code).toBe(3);
    expect(run.stderr).toContain(`key "${scheduleKeysOf(stream).due}" holds a string, where this library keeps a zset`);
  });
});
