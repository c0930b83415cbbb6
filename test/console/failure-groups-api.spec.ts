import { testContext, unique, waitFor } from '../support/helpers.js';
import { type ConsoleApp, q, startConsoleApp } from './console-app.js';

const { redis, closers } = testContext();

async function start(...args: Parameters<typeof startConsoleApp>): Promise<ConsoleApp> {
  const started = await startConsoleApp(...args);
  closers.push(() => started.app.close());
  return started;
}

async function park(stream: string, errorClass: string, error: string, original: string[]): Promise<string> {
  const meta = ['dlq:reason', 'max-deliveries', 'dlq:stream', stream, 'dlq:id', '1-1', 'dlq:group', 'g', 'dlq:consumer', 'c1'];
  meta.push('dlq:error', error, 'dlq:error_class', errorClass, 'dlq:deliveries', '5', 'dlq:time', String(Date.now()));
  return (await redis.xadd(`${stream}:dlq`, '*', ...meta, ...original)) as string;
}

async function arrange(): Promise<{ stream: string; declined: string[] }> {
  const stream = unique('console-groups');
  await redis.xgroup('CREATE', stream, 'g', '$', 'MKSTREAM');
  const declined: string[] = [];
  for (const card of ['4111-1', '4111-2', '4111-1'])
    declined.push(await park(stream, 'PaymentError', `Card ${card} declined`, ['data', JSON.stringify({ card })]));
  await park(stream, 'TypeError', 'x is undefined', ['data', '{}']);
  return { stream, declined };
}

const mask = (fields: Array<[string, string]>) => fields.map(([n, v]): [string, string] => [n, n === 'card' ? '****' : v]);

describe('console API: failure groups and the re-drive dry run (Express, real Redis)', () => {
  it('lists groups per stream and across streams, drills down to the records of one, dry-runs and re-drives it', async () => {
    const { stream, declined } = await arrange();
    const c = await start({ streams: [stream], auditStream: unique('audit'), guard: () => 'tester', redact: mask });

    const one = await c.get(`dead-letters/groups?${q({ stream })}`);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ total: 4, scanned: 4, complete: true });
    const [payment] = one.body.groups;
    expect(payment).toMatchObject({ errorClass: 'PaymentError', pattern: 'Card <n>-<n> declined', count: 3 });
    const across = await c.get('dead-letters/groups');
    expect(across.body.groups[0].streams).toEqual({ [stream]: 3 });

    const records = await c.get(`dead-letters?${q({ stream, cause: payment.fingerprint })}`);
    expect(records.body.items.map((d: { id: string }) => d.id)).toEqual(declined);

    const preview = await c.get(`dead-letters/redrive-preview?${q({ stream, cause: payment.fingerprint, key: 'card' })}`);
    expect(preview.status).toBe(200);
    expect(preview.body).toMatchObject({ wouldRedrive: 3, oldest: { id: declined[0] }, newest: { id: declined[2] } });
    // Ordering keys are payload values: the redaction hook sees them as the field they came from.
    expect(preview.body.keys).toEqual({
      field: 'card',
      distinct: 2,
      top: [
        { key: '****', count: 2 },
        { key: '****', count: 1 },
      ],
      missing: 0,
    });
    expect(await redis.xlen(stream)).toBe(0);

    const redrive = await c.post('dead-letters/redrive-matching', { stream, cause: payment.fingerprint });
    expect(redrive.status).toBe(200);
    expect(redrive.body.redriven.map((r: { id: string }) => r.id)).toEqual(declined);
    expect(await redis.xlen(stream)).toBe(3);
  });

  it('answers 400 for a malformed fingerprint or key field and 404 for an unknown group, changing nothing', async () => {
    const { stream } = await arrange();
    const c = await start({ streams: [stream], auditStream: unique('audit'), guard: () => 'tester' });
    const bad = await c.get(`dead-letters/redrive-preview?${q({ stream, cause: '<script>' })}`);
    expect(bad).toMatchObject({ status: 400, body: { message: expect.stringContaining('12 hex digits') } });
    expect((await c.get(`dead-letters?${q({ stream, cause: 'nope' })}`)).status).toBe(400);
    const longKey = await c.get(`dead-letters/redrive-preview?${q({ stream, key: 'k'.repeat(500) })}`);
    expect(longKey.status).toBe(400);
    const unknown = await c.get(`dead-letters/redrive-preview?${q({ stream, cause: 'abcdefabcdef' })}`);
    expect(unknown).toMatchObject({
      status: 404,
      body: { message: expect.stringContaining('no records of failure group abcdefabcdef') },
    });
    const redrive = await c.post('dead-letters/redrive-matching', { stream, cause: 'abcdefabcdef' });
    expect(redrive.status).toBe(404);
    expect((await c.get(`dead-letters/groups?${q({ stream: unique('not-served') })}`)).status).toBe(404);
    expect(await redis.xlen(`${stream}:dlq`)).toBe(4);
  });

  it('starts a canary run (answering its id at once), serves its progress, and refuses bad options and unknown runs', async () => {
    const { stream } = await arrange();
    const c = await start({ streams: [stream], auditStream: unique('audit'), guard: () => 'tester' });
    const { body } = await c.get(`dead-letters/groups?${q({ stream })}`);
    const cause = body.groups[0].fingerprint as string;

    const bad = await c.post('dead-letters/canary', { stream, cause, maxFailureRatio: '0.5' });
    expect(bad).toMatchObject({ status: 400, body: { message: 'maxFailureRatio must be a number from 0 to 1, got "0.5".' } });
    expect((await c.post('dead-letters/canary', { stream, cause, canary: 5000 })).status).toBe(400);
    expect((await c.post('dead-letters/canary', { stream, cause: 'abcdefabcdef' })).status).toBe(404);
    expect((await c.get(`dead-letters/canary?${q({ run: 'nope' })}`)).status).toBe(404);

    // No consumer runs group g: the canary is never acknowledged, so it fails once settleMs passes.
    const started = await c.post('dead-letters/canary', { stream, cause, canary: 1, settleMs: 2_000 });
    expect(started.status).toBe(200);
    const run = started.body.runId as string;
    // One live run per stream and cause: a second start answers 409 with the live run's id.
    const second = await c.post('dead-letters/canary', { stream, cause });
    expect(second).toMatchObject({ status: 409, body: { runId: run } });
    expect(second.body.message).toContain(`is running already: run ${run}`);
    const end = await waitFor(async () => {
      const progress = (await c.get(`dead-letters/canary?${q({ run })}`)).body;
      return progress.state === 'running' ? null : progress;
    }, 'the canary run to end');
    expect(end).toMatchObject({ state: 'stopped', phase: 'canary', redriven: 1, failedAgain: 1 });
    expect(end.reason).toContain('not acknowledged within 2000 ms');
    expect(await redis.xlen(`${stream}:dlq`)).toBe(3);
  });
});
