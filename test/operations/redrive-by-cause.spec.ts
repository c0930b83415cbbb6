import { StreamOperations } from 'nest-redis-streams';
import { CANARY_CAUSE as CAUSE, arrangeDeadLetters, canaryConsumer } from '../support/canary-fixtures.js';
import { testContext, unique, waitFor } from '../support/helpers.js';

const { redis, closers } = testContext();
jest.setTimeout(120_000);

describe('re-drive by cause reads the set its dry run counted (StreamOperations, real consumer, real Redis)', () => {
  it('re-drives 600 letters of a cause that is not fixed 600 times, as its dry run said, not again as they park again', async () => {
    const stream = unique('by-cause');
    // More than one page (500): the second page would start among the letters parked again.
    await arrangeDeadLetters(redis, stream, 600);
    const { runs } = await canaryConsumer(closers, stream, () => true);
    const ops = new StreamOperations(redis, { streams: [stream], auditStream: unique('audit') });
    const preview = await ops.previewRedrive(stream, { cause: CAUSE });
    expect(preview).toMatchObject({ wouldRedrive: 600, scanned: 600, complete: true });
    const report = await ops.redriveMatching('tester', stream, { cause: CAUSE });
    expect({ redriven: report.redriven.length, scanned: report.scanned, more: report.more }).toEqual({
      redriven: 600,
      scanned: 600,
      more: false,
    });
    expect(report.upTo).toBe(preview.upTo);
    // Every re-driven entry ran once and parked again: 600 runs, 600 letters, nothing more.
    await waitFor(async () => runs.length >= 600 && (await redis.xlen(`${stream}:dlq`)) === 600, '600 runs parked again');
    await waitFor(async () => (await redis.xlen(stream)) === 600 && (await pending(stream)) === 0, 'the group to settle');
    expect(runs).toHaveLength(600);
    expect(new Set(runs).size).toBe(600);
  });

  it("with the dry run's upTo, re-drives exactly what it counted: letters parked since stay", async () => {
    const stream = unique('by-cause');
    await arrangeDeadLetters(redis, stream, 5);
    const ops = new StreamOperations(redis, { streams: [stream], auditStream: unique('audit') });
    const preview = await ops.previewRedrive(stream, { cause: CAUSE });
    expect(preview.wouldRedrive).toBe(5);
    await arrangeDeadLetters(redis, stream, 3, 100); // parked after the dry run
    const report = await ops.redriveMatching('tester', stream, { cause: CAUSE, upTo: preview.upTo! });
    expect(report.redriven).toHaveLength(5);
    const left = await ops.listDeadLetters(stream, { cause: CAUSE });
    expect(left.items.map((l) => JSON.parse(l.fields.data).n)).toEqual([100, 101, 102]);
    // A bound that is not an id is refused before anything is read.
    await expect(ops.redriveMatching('tester', stream, { cause: CAUSE, upTo: 'latest' })).rejects.toThrow(/upTo/);
  });
});

async function pending(stream: string): Promise<number> {
  const [count] = (await redis.xpending(stream, 'g')) as [number];
  return count;
}
