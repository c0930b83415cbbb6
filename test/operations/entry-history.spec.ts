import { Controller } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { NonRetryableError, StreamOperations } from 'nest-redis-streams';
import { startMicroservice, testContext, unique, waitFor } from '../support/helpers.js';

const { redis, closers } = testContext();
jest.setTimeout(60_000);

describe('entry history and re-drive lineage (StreamOperations, real consumer, real Redis)', () => {
  it('follows an entry from its first id through park, re-drive and a second park, and a healthy one to its ack', async () => {
    const stream = unique('history');
    await redis.xgroup('CREATE', stream, 'g', '$', 'MKSTREAM');
    await redis.xgroup('CREATE', stream, 'other', '$');
    @Controller()
    class Handler {
      @EventPattern(stream)
      handle(@Payload() data: { ok: boolean }) {
        if (!data.ok) throw new NonRetryableError('Order o-1 was declined.');
      }
    }
    const { app } = await startMicroservice([Handler], { group: 'g', consumer: 'c1' });
    closers.push(() => app.close());
    const ops = new StreamOperations(redis, { streams: [stream] });
    const dlq = `${stream}:dlq`;

    const first = (await redis.xadd(stream, '*', 'v', 'nrs/1', 'data', '{"ok":false}')) as string;
    await waitFor(async () => (await redis.xlen(dlq)) === 1, 'the first park');
    const [firstLetter] = (await ops.listDeadLetters(stream)).items;
    const { newId } = await ops.redrive('tester', stream, firstLetter.id);
    await waitFor(
      async () => (await redis.xlen(dlq)) === 1 && (await ops.listDeadLetters(stream)).items[0].originalId === newId,
      'the second park',
    );
    const [secondLetter] = (await ops.listDeadLetters(stream)).items;
    // The second dead letter keeps the lineage among the entry's own fields.
    expect(secondLetter.fields).toMatchObject({ 'nrs:redriven_from': firstLetter.id, 'nrs:original_id': first });

    const history = await ops.entryHistory(stream, newId);
    expect(history).toMatchObject({ inStream: true, complete: true });
    expect(history.steps.map((s) => [s.what, s.id])).toEqual([
      ['added', first],
      ['parked', firstLetter.id],
      ['re-driven', newId],
      ['parked', secondLetter.id],
    ]);
    expect(history.steps[3].detail).toMatch(
      /parked again as .* \(non-retryable\) by group g after 1 deliveries: NonRetryableError: Order o-1 was declined\./,
    );

    const healthy = (await redis.xadd(stream, '*', 'v', 'nrs/1', 'data', '{"ok":true}')) as string;
    await waitFor(
      async () => (await redis.xpending(stream, 'g'))[0] === 0 && (await ops.entryHistory(stream, healthy)).steps.length === 3,
      'the ack',
    );
    const acked = await ops.entryHistory(stream, healthy);
    expect(acked.steps.map((s) => s.what)).toEqual(['added', 'acknowledged', 'waiting']);
    expect(acked.steps[2].detail).toBe('not delivered to group other yet');
  });

  it('answers for an entry no longer in the stream with what its id still tells', async () => {
    const stream = unique('history-gone');
    await redis.xgroup('CREATE', stream, 'g', '$', 'MKSTREAM');
    const ops = new StreamOperations(redis, { streams: [stream] });
    const gone = await ops.entryHistory(stream, '1-1');
    expect(gone.inStream).toBe(false);
    expect(gone.steps[0].detail).toContain('no longer in the stream');
  });
});
