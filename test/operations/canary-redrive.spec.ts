import { type CanaryProgress, DeadLetterService, OperationError, StreamOperations } from 'nest-redis-streams';
import { CanaryRedrives } from '../../libs/nest-redis-streams/src/operations/canary-redrive.js';
import type { CanaryTiming } from '../../libs/nest-redis-streams/src/operations/canary-progress.js';
import { CanaryRunningError } from '../../libs/nest-redis-streams/src/operations/errors/canary-running.error.js';
import { CANARY_CAUSE as CAUSE, arrangeDeadLetters, canaryConsumer } from '../support/canary-fixtures.js';
import { redisClient, testContext, unique, waitFor } from '../support/helpers.js';

const { redis, closers } = testContext();
jest.setTimeout(60_000);

/** `count` dead letters of one cause, parked by group `g`; entry n carries `{ n }`. */
async function arrange(count: number): Promise<{ stream: string; audit: string }> {
  const stream = unique('canary');
  await arrangeDeadLetters(redis, stream, count);
  return { stream, audit: unique('audit') };
}

/** The group's handler: fails again (parks) the entries `failing` says, runs the rest. */
async function consumer(stream: string, failing: (n: number) => boolean): Promise<number[]> {
  return (await canaryConsumer(closers, stream, failing)).ran;
}

/** Canary runs of `ops`' streams with a short heartbeat and lease (a slow rate still waits long). */
function shortLeaseCanaries(ops: StreamOperations, timing: Partial<CanaryTiming>, client = redis): CanaryRedrives {
  const served = (stream: string) => ops.served(stream);
  const deadLetters = new DeadLetterService(client);
  return new CanaryRedrives({ redis: client, deadLetters, audit: ops.audit, served, scanLimit: 10_000, timing });
}

describe('canary re-drive of a failure group (StreamOperations, real consumer, real Redis)', () => {
  it('re-drives the canaries, watches them succeed, goes on at the rate limit and ends done', async () => {
    const { stream, audit } = await arrange(8);
    const ran = await consumer(stream, () => false);
    const ops = new StreamOperations(redis, { streams: [stream], auditStream: audit });
    const seen: CanaryProgress[] = [];
    const { runId, done } = await ops.canaries.start('tester', stream, { cause: CAUSE, canary: 3, ratePerSec: 50 }, (p) =>
      seen.push(p),
    );
    const end = await done;
    expect(end).toMatchObject({ runId, state: 'done', redriven: 8, succeeded: 8, failedAgain: 0, watching: 0 });
    expect(ran.sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    // The first three ran alone: nothing past the canaries was re-driven before they all succeeded.
    const firstRate = seen.find((p) => p.phase === 'rate')!;
    expect(firstRate.succeeded).toBeGreaterThanOrEqual(3);
    expect(seen.filter((p) => p.phase === 'canary').every((p) => p.redriven <= 3)).toBe(true);
    expect(await ops.canaries.progress(runId)).toMatchObject({ state: 'done', redriven: 8 });
    const actions = (await ops.auditTrail(50)).items.map((r) => r.action);
    expect(actions.filter((a) => a === 'dlq.canary.redrive')).toHaveLength(8);
    expect(actions).toEqual(expect.arrayContaining(['dlq.canary.start', 'dlq.canary.done']));
  });

  it('stops by itself, saying why, when the canaries fail again; the rest stay parked', async () => {
    const { stream, audit } = await arrange(10);
    await consumer(stream, (n) => n <= 2); // the first two fail again: 2 of 3 canaries
    const ops = new StreamOperations(redis, { streams: [stream], auditStream: audit });
    const { done } = await ops.canaries.start('tester', stream, { cause: CAUSE, canary: 3, maxFailureRatio: 0.5 });
    const end = await done;
    // Two failures of three canaries pass the threshold whatever the third does: it may not be sent.
    expect(end).toMatchObject({ state: 'stopped', phase: 'canary', failedAgain: 2 });
    expect(end.redriven).toBeLessThanOrEqual(3);
    expect(end.reason).toMatch(/Stopped: 2 of the 3 canaries failed again .*0\.67 > maxFailureRatio 0\.5/);
    // The ones never re-driven, and the two parked again.
    const left = 10 - end.redriven + 2;
    await waitFor(async () => (await redis.xlen(`${stream}:dlq`)) === left, `the dead-letter stream to hold ${left}`);
    const [stopped] = (await ops.auditTrail(1)).items;
    expect(stopped).toMatchObject({ action: 'dlq.canary.stopped', ok: true });
  });

  it('after canaries that pass, paces the rest at the rate limit and stops once later ones fail past the threshold', async () => {
    const { stream, audit } = await arrange(12);
    await consumer(stream, (n) => n > 3);
    const ops = new StreamOperations(redis, { streams: [stream], auditStream: audit });
    const started = Date.now();
    const options = { cause: CAUSE, canary: 3, ratePerSec: 20, maxFailureRatio: 0.4 };
    const end = await (await ops.canaries.start('tester', stream, options)).done;
    expect(end).toMatchObject({ state: 'stopped', phase: 'rate', succeeded: 3 });
    expect(end.failedAgain / (end.succeeded + end.failedAgain)).toBeGreaterThan(0.4);
    expect(end.redriven).toBeLessThan(12);
    expect(end.reason).toMatch(/of the \d+ re-driven entries with a known outcome failed again/);
    // At 20 per second, the re-drives after the canaries took at least 50 ms each.
    expect(Date.now() - started).toBeGreaterThanOrEqual((end.redriven - 3) * 50);
  });

  it('refuses bad options and unknown groups before anything runs, with clear errors', async () => {
    const { stream, audit } = await arrange(1);
    const ops = new StreamOperations(redis, { streams: [stream], auditStream: audit });
    const refusal = (options: object) =>
      ops.canaries.start('t', stream, { cause: CAUSE, ...options }).then(
        () => null,
        (err: unknown) => err as OperationError,
      );
    expect(await refusal({ maxFailureRatio: 1.5 })).toMatchObject({
      kind: 'bad-request',
      message: 'maxFailureRatio must be a number from 0 to 1, got 1.5.',
    });
    expect((await refusal({ canary: 0 }))?.message).toBe('canary must be a whole number from 1 to 1000, got 0.');
    expect((await refusal({ ratePerSec: -1 }))?.kind).toBe('bad-request');
    expect((await refusal({ settleMs: 'soon' }))?.message).toContain('settleMs must be a whole number');
    expect((await refusal({ cause: 'nope' }))?.message).toContain('12 hex digits');
    expect((await refusal({ cause: '0123456789ab' }))?.kind).toBe('not-found');
    await expect(ops.canaries.progress('no-such-run')).rejects.toThrow('There is no canary re-drive run "no-such-run"');
    expect(await redis.xlen(`${stream}:dlq`)).toBe(1);
  });

  it('shows a run whose process died (no heartbeat) as aborted, saying how to go on', async () => {
    const { stream, audit } = await arrange(1);
    const ops = new StreamOperations(redis, { streams: [stream], auditStream: audit });
    const stale = { runId: 'r1', stream, state: 'running', updatedAt: Date.now() - 60_000, reason: '' };
    await redis.hset(`${audit}:canary:r1`, 'progress', JSON.stringify(stale));
    const progress = await ops.canaries.progress('r1');
    expect(progress.state).toBe('aborted');
    expect(progress.reason).toContain('Run the same canary again to go on');
  });

  it('a hand-written heartbeat time past what a Date holds reads as aborted, the time as its milliseconds', async () => {
    const { stream, audit } = await arrange(1);
    const ops = new StreamOperations(redis, { streams: [stream], auditStream: audit });
    const stale = { runId: 'r1', stream, state: 'running', updatedAt: -1e17, reason: '' };
    await redis.hset(`${audit}:canary:r1`, 'progress', JSON.stringify(stale));
    const progress = await ops.canaries.progress('r1');
    expect(progress.state).toBe('aborted');
    expect(progress.reason).toContain('No heartbeat since -100000000000000000 ms since the epoch');
  });
  it("re-drives every letter once: one still broken parks again past the run's bound and is not read again (done at 1/10)", async () => {
    const { stream, audit } = await arrange(10);
    const { runs } = await canaryConsumer(closers, stream, (n) => n === 5);
    const ops = new StreamOperations(redis, { streams: [stream], auditStream: audit });
    const newest = (await redis.xrevrange(`${stream}:dlq`, '+', '-', 'COUNT', 1))[0][0];
    const options = { cause: CAUSE, canary: 3, ratePerSec: 100, maxFailureRatio: 0.5 };
    const end = await (await ops.canaries.start('tester', stream, options)).done;
    expect(end).toMatchObject({ state: 'done', redriven: 10, succeeded: 9, failedAgain: 1, upTo: newest, resumes: null });
    expect(end.reason).toBe('All 10 re-driven; 9 succeeded, 1 failed again.');
    expect(runs.filter((n) => n === 5)).toHaveLength(1);
    expect(runs).toHaveLength(10);
    const actions = (await ops.auditTrail(100)).items.map((r) => r.action);
    expect(actions.filter((a) => a === 'dlq.canary.redrive')).toHaveLength(10);
    // The run decided: the next one reads up to the newest letter again, the one parked again included.
    const again = await (await ops.canaries.start('tester', stream, options)).done;
    expect(again).toMatchObject({ state: 'stopped', redriven: 1, failedAgain: 1 });
    expect(again.upTo).not.toBe(newest);
  });

  it('heartbeats while it waits for its rate (reads running, not aborted), refuses a second run with the live id, and ends early on its signal', async () => {
    const { stream, audit } = await arrange(3);
    await consumer(stream, () => false);
    const ops = new StreamOperations(redis, { streams: [stream], auditStream: audit });
    const canaries = shortLeaseCanaries(ops, { heartbeatMs: 100, leaseMs: 500 });
    const beats: CanaryProgress[] = [];
    const stop = new AbortController();
    // 0.04 per second: after the canary, the next re-drive waits 25 s, fifty leases.
    const options = { cause: CAUSE, canary: 1, ratePerSec: 0.04 };
    const { runId, done } = await canaries.start(
      'tester',
      stream,
      options,
      (p) => p.phase === 'rate' && beats.push(p),
      stop.signal,
    );
    await waitFor(() => beats.length >= 15, '15 heartbeats in the rate phase (three leases long)');
    expect(beats.at(-1)!.updatedAt - beats[0].updatedAt).toBeGreaterThan(1_000);
    const progress = await canaries.progress(runId);
    expect(progress).toMatchObject({ state: 'running', phase: 'rate', redriven: 1, succeeded: 1 });
    const second = await canaries.start('other', stream, { cause: CAUSE }).then(
      () => null,
      (err: unknown) => err,
    );
    expect(second).toBeInstanceOf(CanaryRunningError);
    expect(second).toMatchObject({ kind: 'refused', runId });
    expect((second as Error).message).toContain(`is running already: run ${runId}`);
    stop.abort();
    const end = await done;
    expect(end).toMatchObject({ state: 'stopped', redriven: 1 });
    expect(end.reason).toContain('Stopped by its caller before the end');
    const [last] = (await ops.auditTrail(1)).items;
    expect(last).toMatchObject({ action: 'dlq.canary.stopped', target: runId, ok: true });
    // Ended without a decision: the next run takes it over at once, reading up to the same letter.
    const next = await canaries.start('tester', stream, { cause: CAUSE, ratePerSec: 100 });
    expect(await next.done).toMatchObject({ state: 'done', redriven: 2, resumes: runId, upTo: end.upTo });
  });

  it('accepts one of five concurrent starts of the same canary; the others answer with its run id', async () => {
    const { stream, audit } = await arrange(8);
    const { runs } = await canaryConsumer(closers, stream, () => false);
    const ops = new StreamOperations(redis, { streams: [stream], auditStream: audit });
    const options = { cause: CAUSE, canary: 2, ratePerSec: 100 };
    const starts = await Promise.allSettled([1, 2, 3, 4, 5].map((i) => ops.canaries.start(`op${i}`, stream, options)));
    const accepted = starts.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const refused = starts.flatMap((s) => (s.status === 'rejected' ? [s.reason as CanaryRunningError] : []));
    expect(accepted).toHaveLength(1);
    expect(refused.map((e) => [e.name, e.runId])).toEqual(Array(4).fill(['CanaryRunningError', accepted[0].runId]));
    expect(await accepted[0].done).toMatchObject({ state: 'done', redriven: 8, succeeded: 8 });
    expect(runs.sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    const refusals = (await ops.auditTrail(10, undefined, true)).items;
    expect(refusals.filter((r) => r.action === 'dlq.canary.start')).toHaveLength(4);
  });

  it('takes over a run whose process died once its lease lapsed, up to the same letter, and records its end', async () => {
    const { stream, audit } = await arrange(6);
    await consumer(stream, () => false);
    // The dying process: its own connection, cut while it waits for its rate.
    const dying = redisClient();
    const dyingOps = new StreamOperations(dying, { streams: [stream], auditStream: audit });
    const timing = { heartbeatMs: 100, leaseMs: 500 };
    const first = await shortLeaseCanaries(dyingOps, timing, dying).start('a', stream, {
      cause: CAUSE,
      canary: 2,
      ratePerSec: 0.04,
    });
    await waitFor(
      async () => (await dyingOps.canaries.progress(first.runId)).phase === 'rate',
      'the first run to pass its canaries',
    );
    dying.disconnect();
    await expect(first.done).rejects.toThrow('Connection is closed');
    await arrangeDeadLetters(redis, stream, 2, 100); // parked after the first run began: not its to re-drive
    const ops = new StreamOperations(redis, { streams: [stream], auditStream: audit });
    const canaries = shortLeaseCanaries(ops, timing);
    const options = { cause: CAUSE, canary: 2, ratePerSec: 100 };
    const second = await waitFor(
      () =>
        canaries
          .start('b', stream, options)
          .catch((err: unknown) => (err instanceof CanaryRunningError ? null : Promise.reject(err))),
      "the first run's lease to lapse",
    );
    const end = await second.done;
    const firstProgress = await canaries.progress(first.runId);
    expect(end).toMatchObject({ state: 'done', redriven: 4, resumes: first.runId, upTo: firstProgress.upTo });
    expect(firstProgress.state).toBe('aborted');
    expect(firstProgress.reason).toContain(`run ${second.runId} took over`);
    const ends = (await ops.auditTrail(50)).items.filter((r) => r.action === 'dlq.canary.aborted');
    expect(ends).toMatchObject([{ target: first.runId, ok: true }]);
    expect(await redis.xlen(`${stream}:dlq`)).toBe(2);
  });
});
