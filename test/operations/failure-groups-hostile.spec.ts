import { StreamOperations, failureCause } from 'nest-redis-streams';
import { redisClient, unique } from '../support/helpers.js';

const redis = redisClient();
afterAll(() => redis.quit());
jest.setTimeout(60_000);

/** A dead letter as the transport writes it: metadata, then the original (envelope) fields. */
async function park(stream: string, errorClass: string, error: string) {
  const meta = ['dlq:reason', 'non-retryable', 'dlq:stream', stream, 'dlq:id', '1-1', 'dlq:group', 'g', 'dlq:consumer', 'c1'];
  meta.push('dlq:error', error, 'dlq:error_class', errorClass, 'dlq:deliveries', '1', 'dlq:time', String(Date.now()));
  return (await redis.xadd(`${stream}:dlq`, '*', ...meta, 'v', 'nrs/1', 'data', '{}')) as string;
}

describe('failure groups over hostile and everyday messages (StreamOperations against Redis)', () => {
  it('groups letters whose 140–200 KB errors echo a value of "\\ pairs at once, and contractions as one cause', async () => {
    const stream = unique('hostile');
    await redis.xgroup('CREATE', stream, 'g', '$', 'MKSTREAM');
    const ops = new StreamOperations(redis, { streams: [stream] });
    // A validation error echoing the payload it refused: ~70,000-100,000 `"\` pairs inside quotes.
    for (const pairs of [70_000, 85_000, 100_000])
      await park(stream, 'ValidationError', `Invalid value "${'"\\'.repeat(pairs)}" for field amount`);
    for (const who of ['alice', 'bob', 'carol']) await park(stream, 'NotFoundError', `Couldn't find customer '${who}'.`);
    for (const who of ['alice', 'bob']) await park(stream, 'NotFoundError', `Customer '${who}' was not found.`);

    // Before the scan was bounded, each hostile letter took 5-18 s of event loop: three took far
    // longer than this generous bound, which only a stalled loop can exceed.
    const started = Date.now();
    const found = await ops.failureGroups(stream);
    expect(Date.now() - started).toBeLessThan(5_000);

    expect(found).toMatchObject({ total: 8, scanned: 8, complete: true });
    expect(found.groups.map((g) => [g.errorClass, g.pattern, g.count])).toEqual([
      ['NotFoundError', "Couldn't find customer <q>.", 3],
      // `""` closes at once; the `"` after the backslash opens a value that runs past the cut.
      ['ValidationError', 'Invalid value <q>\\<q>', 3],
      ['NotFoundError', 'Customer <q> was not found.', 2],
    ]);
    const echoed = found.groups[1];
    expect(echoed.fingerprint).toBe(
      failureCause('ValidationError', `Invalid value "${'"\\'.repeat(9_000)}" and more`).fingerprint,
    );
    // The sample is the newest message as written, whole.
    expect(echoed.sample.length).toBe('Invalid value "" for field amount'.length + 200_000);

    const page = await ops.listDeadLetters(stream, { cause: echoed.fingerprint });
    expect(page.items).toHaveLength(3);
  });
});
