import { Controller } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { NonRetryableError, StreamOperations } from 'nest-redis-streams';
import { redisClient, startMicroservice, testContext, unique, waitFor } from '../support/helpers.js';

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

  it('follows a chain re-driven twice from any of its ids: first add, both parks, both re-drives, the outcome', async () => {
    const stream = unique('history-chain');
    await redis.xgroup('CREATE', stream, 'g', '$', 'MKSTREAM');
    let runs = 0;
    @Controller()
    class Handler {
      @EventPattern(stream)
      handle(@Payload() data: { ok?: boolean }) {
        if (data.ok) return;
        // Fails twice (two parks), then the cause is fixed.
        if (++runs <= 2) throw new NonRetryableError(`Customer c-${runs} was not found.`);
      }
    }
    const { app } = await startMicroservice([Handler], { group: 'g', consumer: 'c1' });
    closers.push(() => app.close());
    const ops = new StreamOperations(redis, { streams: [stream] });
    const dlq = `${stream}:dlq`;
    const parkedOnce = async (of: string) => {
      await waitFor(async () => (await ops.listDeadLetters(stream)).items.some((d) => d.originalId === of), `the park of ${of}`);
      return (await ops.listDeadLetters(stream)).items.find((d) => d.originalId === of)!.id;
    };

    // Entries added around the chain do not belong to it.
    await redis.xadd(stream, '*', 'v', 'nrs/1', 'data', '{"ok":true}');
    const e1 = (await redis.xadd(stream, '*', 'v', 'nrs/1', 'data', '{}')) as string;
    const d1 = await parkedOnce(e1);
    const { newId: e2 } = await ops.redrive('tester', stream, d1);
    const d2 = await parkedOnce(e2);
    const { newId: e3 } = await ops.redrive('tester', stream, d2);
    await waitFor(async () => runs === 3 && (await redis.xpending(stream, 'g'))[0] === 0, 'the third run and its ack');
    expect(await redis.xlen(dlq)).toBe(0);

    const chain = [
      ['added', e1],
      ['parked', d1],
      ['re-driven', e2],
      ['parked', d2],
      ['re-driven', e3],
      ['acknowledged', e3],
    ];
    for (const asked of [e1, e2, e3]) {
      const history = await ops.entryHistory(stream, asked);
      expect({ asked, steps: history.steps.map((s) => [s.what, s.id]) }).toEqual({ asked, steps: chain });
      expect(history).toMatchObject({ id: asked, inStream: true, complete: true });
    }
    const steps = (await ops.entryHistory(stream, e1)).steps;
    expect(steps[4].detail).toBe(`re-driven to ${stream} for group g`);
    expect(steps.slice(0, 5).map((s) => s.at)).toEqual([...steps.slice(0, 5).map((s) => s.at)].sort((a, b) => a - b));

    // Bounded: with a scan limit of 1 the chain read stops at its first entry and says so.
    const bounded = await new StreamOperations(redis, { streams: [stream], scanLimit: 1 }).entryHistory(stream, e1);
    expect(bounded.complete).toBe(false);
    expect(bounded.scanned).toBeLessThanOrEqual(2);
  });

  it('stops reading when its signal fires (the console request ended), between pages', async () => {
    const stream = unique('history-abort');
    await redis.xgroup('CREATE', stream, 'g', '$', 'MKSTREAM');
    const first = (await redis.xadd(stream, '*', 'n', '0')) as string;
    const pipeline = redis.pipeline();
    for (let i = 0; i < 2_000; i++) pipeline.xadd(stream, '*', 'n', String(i));
    for (let i = 0; i < 2_000; i++) pipeline.xadd(`${stream}:dlq`, '*', 'dlq:id', '1-1', 'dlq:reason', 'non-retryable');
    await pipeline.exec();
    // A connection of its own whose XRANGE calls are counted; the request "ends" after the first.
    const own = redisClient();
    closers.push(() => own.quit());
    const request = new AbortController();
    let ranges = 0;
    const xrange = own.xrange.bind(own);
    own.xrange = ((...args: Parameters<typeof xrange>) => {
      ranges += 1;
      request.abort();
      return xrange(...args);
    }) as typeof own.xrange;
    const ops = new StreamOperations(own, { streams: [stream] });
    await expect(ops.entryHistory(stream, first, request.signal)).rejects.toMatchObject({ name: 'AbortError' });
    expect(ranges).toBe(1);
    // Not stopped, the same read takes the entry, then 5 pages of the stream and 5 of the dead letters.
    ranges = 0;
    const full = await ops.entryHistory(stream, first, new AbortController().signal);
    expect(full).toMatchObject({ complete: true, scanned: 4_001 });
    expect(ranges).toBe(11);
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
