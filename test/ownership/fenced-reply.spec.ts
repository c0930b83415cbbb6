import { Controller } from '@nestjs/common';
import { Ctx, MessagePattern, Payload } from '@nestjs/microservices';
import { firstValueFrom } from 'rxjs';
import { RequestTimeoutError, type RedisStreamsContext } from 'nest-redis-streams';
import { partitionOwnerKey } from '../../libs/nest-redis-streams/src/keys/index.js';
import { withStreamScripts } from '../../libs/nest-redis-streams/src/redis/scripts.js';
import { clientContext } from '../client/client-fixture.js';
import { pendingCount, redisClient, startMicroservice, unique, waitFor } from '../support/helpers.js';

// Request/response under exclusive ownership: a reply is written only while the request's
// partition is owned, in the same script as the XADD (single node). An instance that lost the
// partition while its handler ran must not answer: the new owner runs the request again.

const LEASE = { group: 'g', ownership: 'exclusive', ownershipLeaseMs: 600, minIdleTimeMs: 1_000 } as const;

describe('replies under exclusive ownership', () => {
  const { redis, closers, client } = clientContext();

  it('answers a request while the partition is owned', async () => {
    const stream = unique('fenced-rpc');
    @Controller()
    class Doubler {
      @MessagePattern(stream, LEASE)
      double(@Payload() n: number) {
        return n * 2;
      }
    }
    const { app, server } = await startMicroservice([Doubler], { consumer: 'owner' });
    closers.push(() => app.close());
    expect(server.getOwnership()[0]?.owned).toEqual([0]);

    await expect(firstValueFrom(client().send<number>(stream, 21))).resolves.toBe(42);
    expect(await redis.hget(partitionOwnerKey(stream, 'g'), 'owner')).toBe(server.getOwnership()[0].member);
    await waitFor(async () => (await pendingCount(redis, stream, 'g')) === 0, 'the request acked');
  });

  it('writes no reply once another instance took the partition while the handler ran, and leaves the request pending', async () => {
    const stream = unique('fenced-rpc-lost');
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const started: string[] = [];
    @Controller()
    class Slow {
      @MessagePattern(stream, LEASE)
      async answer(@Payload() n: number, @Ctx() ctx: RedisStreamsContext) {
        started.push(ctx.getEntryId());
        await gate;
        return n + 1;
      }
    }
    const { app, server } = await startMicroservice([Slow], { consumer: 'stale' });
    closers.push(() => app.close());
    const reply = firstValueFrom(client({ requestTimeoutMs: 2_000 }).send<number>(stream, 1)).catch((err: unknown) => err);
    await waitFor(() => started.length === 1, 'the handler started');

    // Another instance owns the partition now (a later generation, a lease far in the future).
    const owner = partitionOwnerKey(stream, 'g');
    await redis.hset(owner, 'owner', 'intruder', 'gen', '99', 'until', String(Date.now() + 600_000));
    await waitFor(() => (server.getOwnership()[0]?.owned ?? [0]).length === 0, 'the instance noticed the partition is gone');
    release();

    const outcome = await reply;
    expect(outcome).toBeInstanceOf(RequestTimeoutError);
    // Not acked by the stale instance: the new owner finds it in the PEL and runs it again.
    expect(await pendingCount(redis, stream, 'g')).toBe(1);
    const [[id, , , deliveries]] = (await redis.xpending(stream, 'g', '-', '+', 10)) as Array<[string, string, number, number]>;
    expect([id, deliveries]).toEqual([started[0], 1]);
  });

  it('the reply script refuses a stale generation and writes for the current one', async () => {
    const stream = unique('fenced-reply-script');
    const replyTo = `${stream}:replies`;
    const scripted = withStreamScripts(redisClient());
    closers.push(() => scripted.quit());
    const owner = partitionOwnerKey(stream, 'g');
    await scripted.xadd(replyTo, '*', 'seed', '1');
    const [, first] = await scripted.nrsOwnClaim(owner, 'old', 60_000, '');
    await scripted.hset(owner, 'until', 0);
    const [, second] = await scripted.nrsOwnClaim(owner, 'new', 60_000, '');
    expect([first, second]).toEqual([1, 2]);

    const reply = ['NOMKSTREAM', '*', 'correlation_id', 'c1', 'response', '"x"'];
    expect(await scripted.nrsReplyFenced(replyTo, owner, 'old', '1', ...reply)).toBeNull();
    expect(await scripted.xlen(replyTo)).toBe(1);
    expect(await scripted.nrsReplyFenced(replyTo, owner, 'new', '2', ...reply)).toMatch(/^\d+-\d+$/);
    expect(await scripted.xlen(replyTo)).toBe(2);
  });
});
