import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import type { Redis } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import {
  type ClientWriteObserver,
  EmitBatchError,
  PayloadTooLargeError,
  PublishFailedError,
  RedisStreamsContext,
  StreamRecord,
  partitionOf,
  partitionStream,
} from 'nest-redis-streams';
import { readAll, startMicroservice, unique, waitFor } from '../support/helpers.js';
import { clientContext } from './client-fixture.js';

/** Runs `work` and resolves with what it threw. */
async function failureOf(work: Promise<unknown>): Promise<EmitBatchError> {
  const error = await work.then(
    () => null,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(EmitBatchError);
  return error as EmitBatchError;
}

describe('RedisStreamsClient emitBatch', () => {
  const { redis, closers, client } = clientContext();

  it('stores one entry per element, in order, each with its own event id and headers, and a handler gets each', async () => {
    const stream = unique('batch');
    const seen: Array<{ data: unknown; eventId?: string; headers: Record<string, string>; entryId: string }> = [];
    @Controller()
    class Orders {
      @EventPattern(stream)
      placed(@Payload() data: unknown, @Ctx() ctx: RedisStreamsContext) {
        seen.push({ data, eventId: ctx.getEventId(), headers: ctx.getHeaders(), entryId: ctx.getEntryId() });
      }
    }
    const { app } = await startMicroservice([Orders], {});
    closers.push(() => app.close());
    const producer = client();
    // Nest 12's dispatch hook runs for every entry, as for emit().
    let hooked = 0;
    producer.setOnDispatchHook((packet) => (packet.metadata = { traceparent: `00-trace-${hooked++}-01` }));

    const ids = await lastValueFrom(
      producer.emitBatch(stream, [
        { n: 0 },
        new StreamRecord({ n: 1 }, { eventId: 'order-1', headers: { tenant: 'acme' } }),
        'two',
      ]),
    );

    expect(ids).toHaveLength(3);
    const entries = await readAll(redis, stream);
    expect(entries.map(([id]) => id)).toEqual(ids);
    expect(entries.map(([, f]) => f.data)).toEqual(['{"n":0}', '{"n":1}', '"two"']);
    expect(entries[1][1].event_id).toBe('order-1');
    const generated = [entries[0][1].event_id, entries[2][1].event_id];
    generated.forEach((eventId) => expect(eventId).toMatch(/^[0-9a-f-]{36}$/));
    expect(generated[0]).not.toBe(generated[1]);
    await waitFor(() => seen.length === 3, 'the handler to get all three entries');
    expect(seen).toEqual([
      { data: { n: 0 }, eventId: generated[0], headers: { traceparent: '00-trace-0-01' }, entryId: ids[0] },
      { data: { n: 1 }, eventId: 'order-1', headers: { traceparent: '00-trace-1-01', tenant: 'acme' }, entryId: ids[1] },
      { data: 'two', eventId: generated[1], headers: { traceparent: '00-trace-2-01' }, entryId: ids[2] },
    ]);
  });

  it('sends a batch in pipelines of at most 500 XADDs, shared with the emits of the same turn, in call order', async () => {
    const stream = unique('batch-pipelines');
    const producer = client();
    await producer.connect();
    const pipeline = jest.spyOn(producer.unwrap<Redis>(), 'pipeline');
    const [ids, single] = await Promise.all([
      lastValueFrom(
        producer.emitBatch(
          stream,
          Array.from({ length: 2_499 }, (_, i) => ({ i })),
        ),
      ),
      lastValueFrom(producer.emit(stream, { i: 2_499 })),
    ]);
    expect(pipeline).toHaveBeenCalledTimes(5);
    const entries = await readAll(redis, stream);
    expect(entries.map(([id]) => id)).toEqual([...ids, single]);
    expect(entries.map(([, f]) => JSON.parse(f.data).i)).toEqual(Array.from({ length: 2_500 }, (_, i) => i));
  });

  it('writes nothing when an entry is over maxPayloadBytes, null or not serializable, naming each by its index', async () => {
    const stream = unique('batch-invalid');
    const producer = client({ maxPayloadBytes: 1_024 });
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    const error = await failureOf(
      lastValueFrom(producer.emitBatch(stream, [{ ok: 0 }, 'x'.repeat(2_048), { ok: 2 }, null, circular, { ok: 5 }])),
    );

    expect(error.failures.map(({ index }) => index)).toEqual([1, 3, 4]);
    expect(error.failures[0].error).toBeInstanceOf(PayloadTooLargeError);
    expect(error.failures[1].error.message).toMatch(/^Entry #3 is null: .*Remove it from the array/);
    expect(error.failures[2].error).toBeInstanceOf(PublishFailedError);
    expect(error.failures[2].error.message).toContain('Could not serialize the data');
    expect(error.ids).toEqual([undefined, undefined, undefined, undefined, undefined, undefined]);
    expect(error.message).toMatch(
      new RegExp(
        `^3 of 6 entries for stream "${stream}" could not be encoded, so nothing was written: #1 \\(PayloadTooLargeError: .*over maxPayloadBytes \\(1024\\)`,
      ),
    );
    expect(error.message).toContain('Fix or remove those entries');
    expect(await redis.exists(stream)).toBe(0);
    // The same client then writes a good batch.
    expect(await lastValueFrom(producer.emitBatch(stream, [{ ok: 0 }, { ok: 2 }]))).toHaveLength(2);
  });

  it('reports the entries Redis refused by index and stores the others, on a partitioned pattern routed per entry', async () => {
    const stream = unique('batch-partitioned');
    const producer = client({ partitions: { [stream]: 3 } });
    const partitions = [0, 1, 2].map((p) => partitionStream(stream, p));
    // Partition 1 is taken by a plain string: Redis answers WRONGTYPE to every XADD routed there.
    await redis.set(partitions[1], 'not a stream');
    const keys = Array.from({ length: 12 }, (_, i) => `customer-${i}`);
    const records = keys.map((key, i) => new StreamRecord({ i }, { partitionKey: key, eventId: `e-${i}` }));

    const error = await failureOf(lastValueFrom(producer.emitBatch(stream, records)));

    const refused = keys.flatMap((key, i) => (partitionOf(key, 3) === 1 ? [i] : []));
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.length).toBeLessThan(12);
    expect(error.failures.map(({ index }) => index)).toEqual(refused);
    for (const { error: cause } of error.failures) {
      expect(cause).toBeInstanceOf(PublishFailedError);
      expect((cause as PublishFailedError).maybeStored).toBe(false);
      expect((cause as PublishFailedError).stream).toBe(partitions[1]);
      expect(cause.message).toMatch(/Redis rejected the entry .*WRONGTYPE/);
    }
    expect(error.message).toContain(`${refused.length} of 12 entries for stream "${stream}" were not stored`);
    expect(error.message).toContain(`The other ${12 - refused.length} were (their ids are in error.ids)`);
    // Every other entry is in its key's partition, under the id reported for it.
    for (const p of [0, 2]) {
      const stored = await readAll(redis, partitions[p]);
      const expected = keys.flatMap((key, i) => (partitionOf(key, 3) === p ? [i] : []));
      expect(stored.map(([, f]) => f.event_id)).toEqual(expected.map((i) => `e-${i}`));
      expect(stored.map(([id]) => id)).toEqual(expected.map((i) => error.ids[i]));
    }
    expect(refused.every((i) => error.ids[i] === undefined)).toBe(true);
  });

  it('round-robins unkeyed entries over the partitions', async () => {
    const stream = unique('batch-round-robin');
    const producer = client({ partitions: { [stream]: 3 } });
    await lastValueFrom(
      producer.emitBatch(
        stream,
        Array.from({ length: 9 }, (_, i) => ({ i })),
      ),
    );
    const lengths = await Promise.all([0, 1, 2].map((p) => redis.xlen(partitionStream(stream, p))));
    expect(lengths).toEqual([3, 3, 3]);
  });

  it('trims with the pattern retention and tells the write observer of every XADD and the retention once', async () => {
    const stream = unique('batch-trim');
    const producer = client({ retentionByPattern: { [stream]: { maxLen: 10 } } });
    const answered: string[] = [];
    const retentions: Array<[string, unknown]> = [];
    const observer: ClientWriteObserver = {
      xaddAnswered: (s, seconds) => {
        expect(seconds).toBeGreaterThanOrEqual(0);
        answered.push(s);
      },
      retentionOf: (s, retention) => retentions.push([s, retention]),
    };
    producer.observeWrites(observer);
    await lastValueFrom(
      producer.emitBatch(
        stream,
        Array.from({ length: 500 }, (_, i) => ({ i })),
      ),
    );
    await lastValueFrom(producer.emitBatch(stream, [{ i: 500 }]));
    // MAXLEN ~ removes whole radix nodes (100 entries by default): about 10 left, never all 501.
    expect(await redis.xlen(stream)).toBeLessThan(200);
    expect(answered).toEqual(Array.from({ length: 501 }, () => stream));
    expect(retentions).toEqual([[stream, { maxLen: 10 }]]);
  });

  it('completes with no ids for an empty array and explains a value that is not an array', async () => {
    const producer = client();
    expect(await lastValueFrom(producer.emitBatch(unique('batch-empty'), []))).toEqual([]);
    const notArray = await lastValueFrom(producer.emitBatch('orders', { id: 1 } as unknown as unknown[])).catch(
      (e: unknown) => e,
    );
    expect(notArray).toBeInstanceOf(TypeError);
    expect((notArray as Error).message).toBe(
      "emitBatch() takes an array of payloads (plain values or StreamRecords), got an object (Object). Pass one array, e.g. client.emitBatch('orders', orders); for a single entry use emit().",
    );
  });

  it('fails every entry for the one reason when Redis is unreachable, naming the stream and the fix', async () => {
    const stream = unique('batch-down');
    // Port 1 refuses connections at once.
    const producer = client({ connection: 'redis://127.0.0.1:1' });
    const error = await failureOf(lastValueFrom(producer.emitBatch(stream, [{ a: 1 }, { a: 2 }])));
    expect(error.failures.map(({ index }) => index)).toEqual([0, 1]);
    expect(error.failures[0].error).toBeInstanceOf(PublishFailedError);
    expect((error.failures[0].error as PublishFailedError).maybeStored).toBe(false);
    expect(error.message).toMatch(
      new RegExp(
        `^2 of 2 entries for stream "${stream}" were not stored: all 2 for the same reason \\(PublishFailedError: Could not write to stream "${stream}"`,
      ),
    );
    expect(error.message).not.toContain('The other');
  });
});
