import { Controller } from '@nestjs/common';
import { Ctx, MessagePattern, Payload, RpcException } from '@nestjs/microservices';
import { firstValueFrom, lastValueFrom, of, toArray } from 'rxjs';
import {
  ClientClosedError,
  NoMessageHandlerError,
  RedisStreamsClient,
  RequestTimeoutError,
  RedisStreamsContext,
  StreamRecord,
} from 'nest-redis-streams';
import { redisUrl, startMicroservice, unique, waitFor } from '../support/helpers.js';
import { clientContext } from './client-fixture.js';

describe('RedisStreamsClient send', () => {
  const { redis, closers, client } = clientContext();

  it('gets every reply to the right caller with two clients sending 200 requests each at once', async () => {
    const stream = unique('rpc');
    @Controller()
    class Math {
      @MessagePattern(stream, { concurrency: 16 })
      async double(@Payload() { who, n }: { who: string; n: number }) {
        // Uneven handling times, so replies come back out of request order.
        await new Promise((r) => setTimeout(r, n % 7));
        return { who, n, doubled: n * 2 };
      }
    }
    const { app } = await startMicroservice([Math], {});
    closers.push(() => app.close());
    const [a, b] = [client(), client()];
    const ask = (c: RedisStreamsClient, who: string) =>
      Promise.all(
        Array.from({ length: 200 }, (_, n) =>
          firstValueFrom(c.send<{ who: string; n: number; doubled: number }>(stream, { who, n })),
        ),
      );

    const [fromA, fromB] = await Promise.all([ask(a, 'a'), ask(b, 'b')]);

    expect(fromA).toEqual(Array.from({ length: 200 }, (_, n) => ({ who: 'a', n, doubled: n * 2 })));
    expect(fromB).toEqual(Array.from({ length: 200 }, (_, n) => ({ who: 'b', n, doubled: n * 2 })));
    expect(a.pendingRequestCount + b.pendingRequestCount).toBe(0);
    const [replyA, replyB] = [await a.replyStream(), await b.replyStream()];
    expect(replyA).not.toEqual(replyB);
    expect(replyA).toMatch(/^nrs:replies:.+:[0-9a-f-]{36}$/);
    // Read replies are deleted: the reply streams do not grow.
    await waitFor(async () => (await redis.xlen(replyA!)) === 0 && (await redis.xlen(replyB!)) === 0, 'reply streams emptied');
  }, 60_000); // 400 requests through a server; took more than 5 s on a busy machine

  it("delivers a streamed response in order, a StreamRecord's headers, and a handler error", async () => {
    const stream = unique('rpc-many');
    const failing = unique('rpc-fail');
    const seen: Array<[string | undefined, Record<string, string>]> = [];
    @Controller()
    class Handlers {
      @MessagePattern(stream)
      count(@Payload() n: number, @Ctx() ctx: RedisStreamsContext) {
        seen.push([ctx.getEventId(), ctx.getHeaders()]);
        return of(...Array.from({ length: n }, (_, i) => i + 1));
      }
      @MessagePattern(failing)
      fail() {
        throw new RpcException('Out of stock: X-1');
      }
    }
    const { app } = await startMicroservice([Handlers], {});
    closers.push(() => app.close());
    const c = client();
    const request = new StreamRecord(3, { eventId: 'req-1', headers: { tenant: 'acme' } });
    expect(await lastValueFrom(c.send(stream, request).pipe(toArray()))).toEqual([1, 2, 3]);
    expect(seen).toEqual([['req-1', { tenant: 'acme' }]]);
    await expect(firstValueFrom(c.send(failing, {}))).rejects.toMatchObject({ message: 'Out of stock: X-1' });
    expect(c.pendingRequestCount).toBe(0);
  });

  it('fails at once, writing nothing, when no consumer group reads the stream', async () => {
    const stream = unique('rpc-nobody');
    const error = await firstValueFrom(client().send(stream, { a: 1 })).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(NoMessageHandlerError);
    expect((error as Error).message).toContain(
      `There is no matching message handler defined in the remote service: no consumer group reads stream "${stream}"`,
    );
    expect(await redis.exists(stream)).toBe(0);
  });

  it('times out 1,000 unanswered requests and forgets every one of them', async () => {
    const stream = unique('rpc-silent');
    // A group exists but no consumer reads it (the service is down): requests are never answered.
    await redis.xgroup('CREATE', stream, 'nest', '$', 'MKSTREAM');
    // Long enough that a busy machine writes each request before it times out (one that times out
    // before its write is, rightly, never written).
    const c = client({ requestTimeoutMs: 2_000 });
    // One request first, so the 1,000 find the reply reader started and the group checked: then
    // each is written at once, whatever the machine's load, and times out on its way or after.
    await expect(firstValueFrom(c.send(stream, { warm: true }))).rejects.toBeInstanceOf(RequestTimeoutError);
    const results = await Promise.all(
      Array.from({ length: 1000 }, (_, i) => firstValueFrom(c.send(stream, { i })).catch((err: unknown) => err)),
    );
    expect(results.every((err) => err instanceof RequestTimeoutError)).toBe(true);
    expect((results[0] as Error).message).toContain(`No reply to the request on stream "${stream}" within 2000 ms`);
    expect((results[0] as Error).message).toContain('no @MessagePattern handler is consuming that stream');
    expect(c.pendingRequestCount).toBe(0);
    // Every request was written, also those whose XADD was still on its way when they timed out.
    // (The warm-up request may or may not be there: it may have timed out before its write.)
    const written = async () => {
      const payloads = (await redis.xrange(stream, '-', '+')).flatMap(([, f]) => f.filter((v) => v.startsWith('{"i":')));
      return new Set(payloads.map((p) => (JSON.parse(p) as { i: number }).i)).size === 1000 && payloads.length === 1000;
    };
    await waitFor(written, 'all 1,000 requests in the stream, once each', 30_000);
  }, 60_000);

  it('forgets a request whose caller unsubscribed', async () => {
    const stream = unique('rpc-unsub');
    await redis.xgroup('CREATE', stream, 'nest', '$', 'MKSTREAM');
    const c = client();
    const subscription = c.send(stream, { a: 1 }).subscribe();
    await waitFor(() => c.pendingRequestCount === 1, 'the request to be registered');
    subscription.unsubscribe();
    expect(c.pendingRequestCount).toBe(0);
  });

  it('close() fails outstanding requests, stops reading and deletes its reply stream', async () => {
    const stream = unique('rpc-close');
    await redis.xgroup('CREATE', stream, 'nest', '$', 'MKSTREAM');
    const c = new RedisStreamsClient({ connection: redisUrl() });
    const waiting = firstValueFrom(c.send(stream, { a: 1 })).catch((err: unknown) => err);
    await waitFor(async () => (await redis.xlen(stream)) === 1, 'the request entry');
    const replyStream = (await c.replyStream())!;
    expect(await redis.exists(replyStream)).toBe(1);
    expect(await redis.pttl(replyStream)).toBeGreaterThan(0);

    await Promise.all([c.close(), c.close()]);

    const error = await waiting;
    expect(error).toBeInstanceOf(ClientClosedError);
    expect((error as Error).message).toContain(`closed before the reply to the request on stream "${stream}" arrived`);
    expect(await redis.exists(replyStream)).toBe(0);
    expect(c.pendingRequestCount).toBe(0);
    // A late reply from a slow server must not re-create the deleted stream (the server uses NOMKSTREAM).
    expect(await redis.xadd(replyStream, 'NOMKSTREAM', '*', 'correlation_id', 'late')).toBeNull();
    expect(await redis.exists(replyStream)).toBe(0);
  });
});
