import { OperationError, StreamOperations, failureCause } from 'nest-redis-streams';
import { redisClient, unique } from '../support/helpers.js';

const redis = redisClient();
afterAll(() => redis.quit());

/** A dead letter as the transport writes it: metadata, then the original (envelope) fields. */
async function park(stream: string, o: { errorClass: string; error: string; reason?: string; group?: string; data?: object }) {
  const meta = ['dlq:reason', o.reason ?? 'max-deliveries', 'dlq:stream', stream, 'dlq:id', '1-1', 'dlq:group', o.group ?? 'g'];
  meta.push('dlq:consumer', 'c1', 'dlq:error', o.error, 'dlq:error_class', o.errorClass, 'dlq:deliveries', '5');
  meta.push('dlq:time', String(Date.now()), 'v', 'nrs/1', 'data', JSON.stringify(o.data ?? {}));
  return (await redis.xadd(`${stream}:dlq`, '*', ...meta)) as string;
}

async function servedStream(): Promise<string> {
  const stream = unique('groups');
  await redis.xgroup('CREATE', stream, 'g', '$', 'MKSTREAM');
  return stream;
}

const declined = (n: number) => ({
  errorClass: 'PaymentError',
  error: `Card ${n} declined for order "o-${n}"`,
  data: { customer: `c${n % 3}` },
});
const missing = (n: number) => ({ errorClass: 'TypeError', error: `Cannot read properties of undefined (reading 'sku${n}')` });

describe('failure groups and the re-drive dry run (StreamOperations against Redis)', () => {
  it('groups dead letters by class and normalised message, with counts, first/last seen and a sample', async () => {
    const stream = await servedStream();
    const ops = new StreamOperations(redis, { streams: [stream] });
    for (let n = 1; n <= 5; n++) await park(stream, declined(n));
    for (let n = 1; n <= 2; n++) await park(stream, missing(n));
    await park(stream, { errorClass: '', error: '', reason: 'payload-trimmed' });

    const found = await ops.failureGroups(stream);
    expect(found).toMatchObject({ total: 8, scanned: 8, complete: true });
    expect(found.groups.map((g) => [g.errorClass, g.pattern, g.count])).toEqual([
      ['PaymentError', 'Card <n> declined for order <q>', 5],
      ['TypeError', 'Cannot read properties of undefined (reading <q>)', 2],
      ['', '(no error recorded: payload-trimmed)', 1],
    ]);
    const [payment] = found.groups;
    expect(payment.fingerprint).toBe(failureCause('PaymentError', 'Card 9 declined for order "x"').fingerprint);
    expect(payment.sample).toBe('Card 5 declined for order "o-5"');
    expect(payment.firstSeen).toBeLessThanOrEqual(payment.lastSeen);
    expect({ ...payment.streams }).toEqual({ [stream]: 5 });
    expect({ ...payment.reasons }).toEqual({ 'max-deliveries': 5 });
  });

  it('merges the groups of every served stream by fingerprint', async () => {
    const [a, b] = [await servedStream(), await servedStream()];
    const ops = new StreamOperations(redis, { streams: [a, b] });
    await park(a, declined(1));
    await park(b, declined(2));
    await park(b, missing(3));
    const all = await ops.failureGroupsAcross();
    expect(all).toMatchObject({ total: 3, scanned: 3, complete: true });
    expect(all.groups[0].count).toBe(2);
    expect({ ...all.groups[0].streams }).toEqual({ [a]: 1, [b]: 1 });
    expect(all.skipped).toEqual([]);
  });

  it('without a stream list, merges the streams with consumer groups and leaves streams nothing consumes out', async () => {
    const stream = await servedStream();
    await park(stream, declined(1));
    // Like a handler's error stream ({<stream>}:nrs-errors:<group>): a stream without groups.
    const unconsumed = `{${stream}}:nrs-errors:g`;
    await redis.xadd(unconsumed, '*', 'error', 'boom');
    const all = await new StreamOperations(redis).failureGroupsAcross();
    const payment = all.groups.find((g) => g.fingerprint === failureCause('PaymentError', declined(1).error).fingerprint)!;
    expect(payment.streams).toHaveProperty([stream], 1);
    expect(all.skipped!.map((s) => s.stream)).not.toContain(unconsumed);
  });

  it('across streams, skips (and names) a stream it cannot read instead of failing them all', async () => {
    const good = await servedStream();
    // Its dead-letter key holds a hash (someone else's key): reading it fails for that stream only.
    const broken = await servedStream();
    await redis.hset(`${broken}:dlq`, 'a', '1');
    await park(good, declined(1));
    const all = await new StreamOperations(redis, { streams: [good, broken] }).failureGroupsAcross();
    expect(all.groups.map((g) => g.count)).toEqual([1]);
    expect(all.skipped).toEqual([
      { stream: broken, reason: expect.stringContaining(`Key "${broken}:dlq" holds a hash, not a stream.`) },
    ]);
  });

  it('stops at the scan budget on a large dead-letter stream and says how far it got', async () => {
    const stream = await servedStream();
    const setup = redis.pipeline();
    const meta = (n: number) => [
      'dlq:reason',
      'non-retryable',
      'dlq:stream',
      stream,
      'dlq:group',
      'g',
      'dlq:error',
      `bad row ${n}`,
    ];
    for (let n = 0; n < 20_000; n++)
      setup.xadd(`${stream}:dlq`, '*', ...meta(n), 'dlq:error_class', 'Error', 'dlq:time', String(n));
    await setup.exec();
    const ops = new StreamOperations(redis, { streams: [stream], scanLimit: 1_000 });
    const partial = await ops.failureGroups(stream);
    expect(partial).toMatchObject({ total: 20_000, scanned: 1_000, complete: false });
    expect(partial.groups).toHaveLength(1);
    expect(partial.groups[0].count).toBe(1_000);
    const [thousandth] = await redis.xrange(`${stream}:dlq`, '-', '+', 'COUNT', 1_000).then((e) => e.slice(-1));
    expect(partial.readUpTo[`${stream}:dlq`]).toBe(thousandth[0]);

    // The whole stream within the default budget (10,000) is still partial, and bounded in time.
    const started = Date.now();
    const bounded = await new StreamOperations(redis, { streams: [stream] }).failureGroups(stream);
    expect(bounded).toMatchObject({ scanned: 10_000, complete: false });
    process.stdout.write(`failure groups: 10,000 dead letters grouped in ${Date.now() - started} ms\n`);
  });

  it('dry-runs a re-drive of one group: how many, which keys, oldest and newest; nothing changes', async () => {
    const stream = await servedStream();
    const ops = new StreamOperations(redis, { streams: [stream] });
    const ids: string[] = [];
    for (let n = 1; n <= 6; n++) ids.push(await park(stream, declined(n)));
    await park(stream, missing(1));
    const [payment] = (await ops.failureGroups(stream)).groups;

    const preview = await ops.previewRedrive(stream, { cause: payment.fingerprint }, 'customer');
    expect(preview).toMatchObject({ wouldRedrive: 6, tombstones: 0, scanned: 7, total: 7, complete: true });
    expect(preview.oldest?.id).toBe(ids[0]);
    expect(preview.newest?.id).toBe(ids[5]);
    expect(preview.keys).toEqual({
      field: 'customer',
      distinct: 3,
      top: [
        { key: 'c1', count: 2 },
        { key: 'c2', count: 2 },
        { key: 'c0', count: 2 },
      ],
      missing: 0,
    });
    expect({ ...preview.groups }).toEqual({ g: 6 });
    expect(await redis.xlen(`${stream}:dlq`)).toBe(7);
    expect(await redis.xlen(stream)).toBe(0);

    const report = await ops.redriveMatching('tester', stream, { cause: payment.fingerprint });
    expect(report.redriven.map((r) => r.id)).toEqual(ids);
    expect(await redis.xlen(stream)).toBe(6);
    const left = await ops.failureGroups(stream);
    expect(left.groups.map((g) => g.errorClass)).toEqual(['TypeError']);
  });

  it('refuses a malformed fingerprint, an unknown one and a bad key field with clear errors, changing nothing', async () => {
    const stream = await servedStream();
    const ops = new StreamOperations(redis, { streams: [stream] });
    await park(stream, declined(1));
    const refusal = (run: () => Promise<unknown>) =>
      run().then(
        () => null,
        (err: unknown) => err as OperationError,
      );

    const malformed = await refusal(() => ops.previewRedrive(stream, { cause: 'Payment*' }));
    expect(malformed).toBeInstanceOf(OperationError);
    expect(malformed).toMatchObject({ kind: 'bad-request', message: expect.stringContaining('12 hex digits') });
    expect((await refusal(() => ops.redriveMatching('t', stream, { cause: '../../etc' })))?.kind).toBe('bad-request');

    const unknown = await refusal(() => ops.previewRedrive(stream, { cause: '000000000000' }));
    expect(unknown).toMatchObject({
      kind: 'not-found',
      message: expect.stringContaining('no records of failure group 000000000000'),
    });
    const redrive = await refusal(() => ops.redriveMatching('t', stream, { cause: '000000000000' }));
    expect(redrive?.kind).toBe('not-found');
    expect(await redis.xlen(`${stream}:dlq`)).toBe(1);

    const key = await refusal(() => ops.previewRedrive(stream, {}, 'x'.repeat(201)));
    expect(key).toMatchObject({ kind: 'bad-request', message: expect.stringContaining('ordering-key field') });
    const [refused] = (await ops.auditTrail(10, undefined, true)).items;
    expect(refused).toMatchObject({ action: 'dlq.redrive-matching', stream, state: 'refused' });
  });
});
