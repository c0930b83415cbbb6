import { Controller, Module } from '@nestjs/common';
import { Ctx, EventPattern } from '@nestjs/microservices';
import { firstValueFrom, lastValueFrom } from 'rxjs';
import {
  DeadLetterService,
  EmitBatchError,
  IDEMPOTENCY_STORE,
  Idempotent,
  InvalidEventIdError,
  JsonCodec,
  RedisIdempotencyStore,
  RedisStreamsClient,
  RedisStreamsContext,
  StreamRecord,
  encodeEnvelope,
} from 'nest-redis-streams';
import { redisUrl, startMicroservice, testContext, unique } from '../support/helpers.js';
import { runCli } from '../cli/run-cli.js';
import { allSettled } from '../support/settled.js';
import { addWithEventIdBytes } from './binary-entries.js';

describe('event ids that are not UTF-8 text', () => {
  const { redis, closers } = testContext();

  it('are dead-lettered as undecodable-event-id with their bytes intact, never taken for one event by @Idempotent()', async () => {
    const stream = unique('binary-ids');
    const applied: Array<string | undefined> = [];
    @Controller()
    class Payments {
      @EventPattern(stream)
      @Idempotent()
      charge(@Ctx() ctx: RedisStreamsContext) {
        applied.push(ctx.getEventId());
      }
    }
    const store = new RedisIdempotencyStore(redis, `${stream}:idem:`);
    @Module({ controllers: [Payments], providers: [{ provide: IDEMPOTENCY_STORE, useValue: store }] })
    class PaymentsModule {}
    const { app } = await startMicroservice([], {}, [], true, [PaymentsModule]);
    closers.push(() => app.close());

    // Two different events whose ids are the bytes ff and fe: as UTF-8 both read as U+FFFD.
    await addWithEventIdBytes(redis, stream, Buffer.from([0xff]), { n: 1 });
    await addWithEventIdBytes(redis, stream, Buffer.from([0xfe]), { n: 2 });
    // A foreign entry (no envelope) whose event_id is not UTF-8 either.
    await redis.xaddBuffer(
      Buffer.from(stream),
      '*',
      Buffer.from('event_id'),
      Buffer.from([0x61, 0xfd]),
      Buffer.from('n'),
      Buffer.from('3'),
    );
    const last = (await redis.xadd(stream, '*', ...encodeEnvelope({ data: { n: 4 }, eventId: 'evt-4' }, new JsonCodec())))!;
    await allSettled(redis, stream, 'nest', last);

    expect(applied).toEqual(['evt-4']);
    const dlq = `${stream}:dlq`;
    const letters = new DeadLetterService(redis);
    const { items } = await letters.list(dlq);
    expect(items.map((l) => l.reason)).toEqual(['undecodable-event-id', 'undecodable-event-id', 'undecodable-event-id']);
    expect(items[0].error).toMatch(/The "event_id" field is not UTF-8 text \(read as "\\ufffd".*Fix the producer/);
    expect(items[0].errorClass).toBe('UndecodableEventIdError');
    const bytes = await Promise.all(items.map((l) => letters.inspectBytes(dlq, l.id)));
    const idBytes = bytes.map((b) => b!.fields.find(([name]) => name.toString() === 'event_id')![1].toString('hex'));
    expect(idBytes).toEqual(['ff', 'fe', '61fd']);
    // The CLI shows U+FFFD escaped, not as a glyph that passes for a character of the id.
    const shown = await runCli(['dlq', 'show', stream, items[0].id]);
    expect(shown.stdout).toContain('event_id = \\ufffd\n');
    expect(shown.stdout).not.toContain('\ufffd');
  }, 60_000); // spawns the CLI

  it('are refused by the client before anything is written: emit, emitBatch and send', async () => {
    const stream = unique('bad-ids');
    const client = new RedisStreamsClient({ connection: redisUrl() });
    closers.push(() => client.close());
    // A lone surrogate is stored as the bytes of U+FFFD, so '\ud800' and '\udbff' would be one id.
    for (const eventId of ['\ud800', 'order-\udc00', 'order-\ufffd', '']) {
      const failure = await lastValueFrom(client.emit(stream, new StreamRecord({ n: 1 }, { eventId }))).catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(InvalidEventIdError);
      expect((failure as InvalidEventIdError).eventId).toBe(eventId);
      expect((failure as Error).message).toContain(`Nothing was written: the eventId of the entry for stream "${stream}"`);
    }
    const batch = await lastValueFrom(
      client.emitBatch(stream, [new StreamRecord(1, { eventId: 'ok-1' }), new StreamRecord(2, { eventId: 'x\ud800' })]),
    ).catch((e: unknown) => e);
    expect(batch).toBeInstanceOf(EmitBatchError);
    expect((batch as EmitBatchError).failures.map((f) => [f.index, f.error.name])).toEqual([[1, 'InvalidEventIdError']]);
    expect((batch as Error).message).toContain('"x\\ud800") is not well-formed text');

    await redis.xgroup('CREATE', stream, 'rpc', '$', 'MKSTREAM');
    const request = await firstValueFrom(client.send(stream, new StreamRecord(1, { eventId: '\ufffd' }))).catch(
      (e: unknown) => e,
    );
    expect(request).toBeInstanceOf(InvalidEventIdError);
    expect((request as Error).message).toContain('"\\ufffd") contains U+FFFD');
    expect(await redis.xlen(stream)).toBe(0);
  });
});
