import { Controller } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { type CanaryProgress, NonRetryableError, OperationError, StreamOperations, failureCause } from 'nest-redis-streams';
import { startMicroservice, testContext, unique, waitFor } from '../support/helpers.js';

const { redis, closers } = testContext();
jest.setTimeout(60_000);

const ERROR = (n: number) => `Order o-${n} was declined by the provider.`;
const CAUSE = failureCause('NonRetryableError', ERROR(1)).fingerprint;

/** `count` dead letters of one cause, parked by group `g`; entry n carries `{ n }`. */
async function arrange(count: number): Promise<{ stream: string; audit: string }> {
  const stream = unique('canary');
  await redis.xgroup('CREATE', stream, 'g', '$', 'MKSTREAM');
  for (let n = 1; n <= count; n++) {
    const meta = [
      'dlq:reason',
      'non-retryable',
      'dlq:stream',
      stream,
      'dlq:id',
      `${n}-0`,
      'dlq:group',
      'g',
      'dlq:consumer',
      'c1',
    ];
    meta.push(
      'dlq:error',
      ERROR(n),
      'dlq:error_class',
      'NonRetryableError',
      'dlq:deliveries',
      '1',
      'dlq:time',
      String(Date.now()),
    );
    await redis.xadd(`${stream}:dlq`, '*', ...meta, 'v', 'nrs/1', 'data', JSON.stringify({ n }));
  }
  return { stream, audit: unique('audit') };
}

/** The group's handler: fails again (parks) the entries `failing` says, runs the rest. */
async function consumer(stream: string, failing: (n: number) => boolean): Promise<number[]> {
  const ran: number[] = [];
  @Controller()
  class Handler {
    @EventPattern(stream)
    handle(@Payload() data: { n: number }) {
      if (failing(data.n)) throw new NonRetryableError(ERROR(data.n));
      ran.push(data.n);
    }
  }
  const { app } = await startMicroservice([Handler], { group: 'g', consumer: 'c1' });
  closers.push(() => app.close());
  return ran;
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
});
