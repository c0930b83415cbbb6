import { Controller, Logger } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import type { Redis } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import {
  PayloadTooLargeError,
  type PayloadDeserializer,
  type PayloadSerializer,
  RedisStreamsContext,
  StreamRecord,
} from 'nest-redis-streams';
import { fieldsToObject, startMicroservice, unique, waitFor } from '../support/helpers.js';
import { clientContext } from './client-fixture.js';

/** Entry fields as an object. */
async function fieldsOf(redis: Redis, stream: string, id: string): Promise<Record<string, string>> {
  const [[, fields]] = await redis.xrange(stream, id, id);
  return fieldsToObject(fields);
}

describe('RedisStreamsClient emit', () => {
  const { redis, closers, client } = clientContext();

  it('stores the envelope and a server @EventPattern handler receives data, headers and event id', async () => {
    const stream = unique('emit');
    const seen: Array<{ data: unknown; headers: Record<string, string>; eventId?: string; entryId: string }> = [];
    @Controller()
    class Orders {
      @EventPattern(stream)
      placed(@Payload() data: unknown, @Ctx() ctx: RedisStreamsContext) {
        seen.push({ data, headers: ctx.getHeaders(), eventId: ctx.getEventId(), entryId: ctx.getEntryId() });
      }
    }
    const { app } = await startMicroservice([Orders], {});
    closers.push(() => app.close());
    const producer = client();
    // Nest 12 packet metadata (what tracing instrumentation sets) travels as headers.
    producer.setOnDispatchHook((packet) => (packet.metadata = { traceparent: '00-abc-def-01' }));

    const id = await lastValueFrom(
      producer.emit(
        stream,
        new StreamRecord({ orderId: 7, total: 12.5 }, { eventId: 'order-7-placed', headers: { tenant: 'acme' } }),
      ),
    );

    expect(id).toMatch(/^\d+-\d+$/);
    const fields = await fieldsOf(redis, stream, id);
    expect(fields).toMatchObject({ v: 'nrs/1', event_id: 'order-7-placed', data: '{"orderId":7,"total":12.5}' });
    expect(JSON.parse(fields.headers)).toEqual({ traceparent: '00-abc-def-01', tenant: 'acme' });
    await waitFor(() => seen.length === 1, 'the handler to receive the event');
    expect(seen[0]).toEqual({
      data: { orderId: 7, total: 12.5 },
      headers: { traceparent: '00-abc-def-01', tenant: 'acme' },
      eventId: 'order-7-placed',
      entryId: id,
    });
  });

  it('sends a plain value as the data with a generated event id', async () => {
    const stream = unique('emit-plain');
    const id = await lastValueFrom(client({ keyPrefix: 'app:' }).emit(stream, { data: 'a business field named data' }));
    const fields = await fieldsOf(redis, `app:${stream}`, id);
    expect(JSON.parse(fields.data)).toEqual({ data: 'a business field named data' });
    expect(fields.event_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(fields.headers).toBeUndefined();
  });

  it('batches the emits of one event-loop turn into one pipeline, each caller getting its own id', async () => {
    const stream = unique('emit-batch');
    const producer = client();
    await producer.connect();
    const pipeline = jest.spyOn(producer.unwrap<Redis>(), 'pipeline');
    const ids = await Promise.all(Array.from({ length: 100 }, (_, i) => lastValueFrom(producer.emit(stream, { i }))));
    expect(pipeline).toHaveBeenCalledTimes(1);
    expect(new Set(ids).size).toBe(100);
    const entries = (await redis.xrange(stream, '-', '+')) as Array<[string, string[]]>;
    expect(entries.map(([id]) => id)).toEqual(ids);
    expect(entries.map(([, f]) => JSON.parse(f[f.indexOf('data') + 1]).i)).toEqual(Array.from({ length: 100 }, (_, i) => i));
  });

  it('round-trips a custom serializer with a matching server deserializer', async () => {
    const stream = unique('emit-codec');
    // Base64 of JSON: not readable as JSON, so the default codec on either side would fail.
    const codec: PayloadSerializer & PayloadDeserializer = {
      serialize: (data) => Buffer.from(JSON.stringify(data)).toString('base64'),
      deserialize: (raw) => JSON.parse(Buffer.from(raw, 'base64').toString()),
    };
    const seen: unknown[] = [];
    @Controller()
    class Sink {
      @EventPattern(stream)
      take(@Payload() data: unknown) {
        seen.push(data);
      }
    }
    const { app } = await startMicroservice([Sink], { deserializer: codec });
    closers.push(() => app.close());
    const id = await lastValueFrom(client({ serializer: codec }).emit(stream, { name: 'Zoë', tags: ['a', 'b'] }));
    expect((await fieldsOf(redis, stream, id)).data).toBe(Buffer.from('{"name":"Zoë","tags":["a","b"]}').toString('base64'));
    await waitFor(() => seen.length === 1, 'the decoded event');
    expect(seen[0]).toEqual({ name: 'Zoë', tags: ['a', 'b'] });
  });

  it('rejects an entry over maxPayloadBytes with a clear error and writes nothing', async () => {
    const stream = unique('emit-big');
    const producer = client({ maxPayloadBytes: 1024 });
    const error = await lastValueFrom(producer.emit(stream, 'x'.repeat(2048))).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(PayloadTooLargeError);
    expect((error as Error).message).toMatch(
      new RegExp(`stream "${stream}" is \\d+ bytes, over maxPayloadBytes \\(1024\\); nothing was written`),
    );
    expect((error as Error).message).toContain('raise the "maxPayloadBytes" option');
    expect(await redis.xlen(stream)).toBe(0);
    expect(await redis.exists(stream)).toBe(0);
    // A small one after it still goes through.
    await lastValueFrom(producer.emit(stream, 'small'));
    expect(await redis.xlen(stream)).toBe(1);
  });

  it("still lets the server consume entries produced by redis-cli next to the client's", async () => {
    const stream = unique('emit-foreign');
    const seen: unknown[] = [];
    @Controller()
    class Mixed {
      @EventPattern(stream)
      take(@Payload() data: unknown, @Ctx() ctx: RedisStreamsContext) {
        seen.push([data, ctx.getEventId() ?? null]);
      }
    }
    const { app } = await startMicroservice([Mixed], {});
    closers.push(() => app.close());
    await redis.xadd(stream, '*', 'userId', '1001', 'amount', '50000');
    await lastValueFrom(client().emit(stream, new StreamRecord({ userId: 1002 }, { eventId: 'e-2' })));
    await redis.xadd(stream, '*', 'event_id', 'cli-3', 'note', 'hand-made');
    await waitFor(() => seen.length === 3, 'three entries');
    expect(seen).toEqual([
      [{ userId: '1001', amount: '50000' }, null],
      [{ userId: 1002 }, 'e-2'],
      [{ event_id: 'cli-3', note: 'hand-made' }, 'cli-3'],
    ]);
  });

  it('trims on XADD with a plain retention and checks MAXLEN against group backlogs', async () => {
    const stream = unique('emit-maxlen');
    const aged = unique('emit-minid');
    await redis.xgroup('CREATE', stream, 'slow', '0', 'MKSTREAM');
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      const producer = client({ retention: { maxLen: 50 }, retentionByPattern: { [aged]: { minIdAgeMs: 60_000 } } });
      await Promise.all(Array.from({ length: 400 }, (_, i) => lastValueFrom(producer.emit(stream, { i }))));
      // MAXLEN ~ trims whole radix nodes (100 entries by default): about 50, never all 400.
      expect(await redis.xlen(stream)).toBeLessThan(200);
      await producer.runRetentionNow();
      const warned = warn.mock.calls.map(([message]) => String(message)).find((m) => m.includes(stream));
      expect(warned).toMatch(
        new RegExp(`Stream "${stream}" is trimmed with MAXLEN ~ 50, but group "slow" has 0 pending and \\d+ undelivered`),
      );
      // Entries from 2 minutes ago go with the next XADD under MINID retention (whole nodes of
      // 100 entries, as `~` trims).
      const old = Date.now() - 120_000;
      for (let i = 1; i <= 250; i++) await redis.xadd(aged, `${old}-${i}`, 'old', String(i));
      await lastValueFrom(producer.emit(aged, 'new'));
      expect(await redis.xlen(aged)).toBeLessThanOrEqual(51);
    } finally {
      warn.mockRestore();
    }
  });
});
