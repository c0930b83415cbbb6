import { AuditLog, type AuditIntent, type CanaryProgress, DeadLetterService, StreamOperations } from 'nest-redis-streams';
import type { Redis } from 'ioredis';
import { CanaryRedrives } from '../../libs/nest-redis-streams/src/operations/canary-redrive.js';
import { CANARY_CAUSE as CAUSE, arrangeDeadLetters, canaryConsumer } from '../support/canary-fixtures.js';
import { fillableRedis } from '../support/full-redis.js';
import { testContext, unique, waitFor } from '../support/helpers.js';

// A canary whose Redis is full for a while (maxmemory, noeviction: every write refused with OOM)
// is still running, not a dead process: it waits the refusals out and goes on, or, past its retry
// window, ends failed saying why; either way its end reaches the audit once Redis has room.

describe('a canary re-drive whose Redis is full for a while', () => {
  const { closers } = testContext();

  /** A private Redis; `fill` also resets the error counts, so that `refusedWrites` counts from there. */
  async function fullRedis() {
    const redis = await fillableRedis(closers);
    const fill = async () => {
      await redis.admin.config('RESETSTAT');
      await redis.fill();
    };
    return { ...redis, fill };
  }

  /** Writes Redis refused for lack of memory since the last fill. */
  async function refusedWrites(admin: Redis): Promise<number> {
    return Number(/errorstat_OOM:count=(\d+)/.exec(await admin.info('errorstats'))?.[1] ?? 0);
  }

  async function arrange(admin: Redis, url: string) {
    const stream = unique('canary-full');
    await arrangeDeadLetters(admin, stream, 6);
    await canaryConsumer(closers, stream, () => false, url);
    const ops = new StreamOperations(admin, { streams: [stream], auditStream: unique('audit') });
    return { stream, ops };
  }

  it('waits out a full Redis and ends done, every step in the audit', async () => {
    const redis = await fullRedis();
    const { stream, ops } = await arrange(redis.admin, redis.url);
    const seen: CanaryProgress[] = [];
    const options = { cause: CAUSE, canary: 2, ratePerSec: 2 };
    const { runId, done } = await ops.canaries.start('tester', stream, options, (p) => seen.push(p));
    await waitFor(() => seen.some((p) => p.phase === 'rate'), 'the canaries to pass');
    await redis.fill();
    await waitFor(async () => (await refusedWrites(redis.admin)) >= 5, 'five of its writes refused');
    // Its last heartbeat is recent (well within the lease): running, not aborted.
    expect(await ops.canaries.progress(runId)).toMatchObject({ state: 'running' });
    await redis.drain();
    const end = await done;
    expect(end).toMatchObject({ state: 'done', redriven: 6, succeeded: 6, failedAgain: 0 });
    const records = (await ops.auditTrail(50)).items;
    expect(records.filter((r) => r.state !== 'done')).toEqual([]);
    expect(records.filter((r) => r.action === 'dlq.canary.redrive')).toHaveLength(6);
    expect(records[0]).toMatchObject({ action: 'dlq.canary.done', target: runId, ok: true });
  }, 60_000); // a redis-server process

  it('past its retry window ends failed with the true reason, recorded in the audit once Redis has room', async () => {
    const redis = await fullRedis();
    const { stream, ops } = await arrange(redis.admin, redis.url);
    const served = (name: string) => ops.served(name);
    const deadLetters = new DeadLetterService(redis.admin);
    const timing = { retryForMs: 300 };
    const canaries = new CanaryRedrives({ redis: redis.admin, deadLetters, audit: ops.audit, served, scanLimit: 10_000, timing });
    const seen: CanaryProgress[] = [];
    const { runId, done } = await canaries.start('tester', stream, { cause: CAUSE, canary: 2, ratePerSec: 2 }, (p) =>
      seen.push(p),
    );
    const failedEnd = done.then(
      () => null,
      (err: unknown) => err as Error,
    );
    await waitFor(() => seen.some((p) => p.phase === 'rate'), 'the canaries to pass');
    const begun = jest.spyOn(AuditLog.prototype, 'begin');
    closers.push(async () => begun.mockRestore());
    await redis.fill();
    const ending = (call: unknown[]) => (call[0] as AuditIntent).action === 'dlq.canary.failed';
    await waitFor(() => begun.mock.calls.some(ending), 'the run to give up and record its end');
    await redis.drain();
    expect((await failedEnd)?.message).toMatch(/^Redis refused it for \d+ s, the last time with: OOM/);
    const progress = await canaries.progress(runId);
    expect(progress.state).toBe('failed');
    expect(progress.reason).toMatch(/^Failed: Redis refused it for \d+ s, the last time with: OOM .*Run the same canary again/);
    const [last] = (await ops.auditTrail(1)).items;
    expect(last).toMatchObject({ action: 'dlq.canary.failed', target: runId, state: 'done', ok: true });
    expect(JSON.parse(last.result).reason).toBe(progress.reason);
    // It ended without a decision: the next run takes over at once, reading up to the same letter.
    const next = await canaries.start('tester', stream, { cause: CAUSE, ratePerSec: 100 });
    expect(await next.done).toMatchObject({ state: 'done', resumes: runId, upTo: progress.upTo });
  }, 60_000); // a redis-server process
});
