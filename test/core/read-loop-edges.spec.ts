import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { Redis } from 'ioredis';
import { RedisStreamsContext, RedisStreamsServer } from 'nest-redis-streams';
import { pendingCount, redisUrl, startMicroservice, testContext, unique, waitFor } from '../support/helpers.js';

jest.setTimeout(30_000);

/** Delivery count Redis records for one pending entry (0 when it is not pending). */
async function deliveriesOf(redis: Redis, stream: string, group: string, id: string): Promise<number> {
  const rows = (await redis.xpending(stream, group, id, id, 1)) as Array<[string, string, number, number]>;
  return rows.length === 0 ? 0 : Number(rows[0][3]);
}

/** Kills the connections of one role (`nrs:reader:...`) the way a network fault or a proxy would. */
async function killConnections(redis: Redis, namePrefix: string): Promise<number> {
  const list = (await redis.client('LIST')) as string;
  let killed = 0;
  for (const line of list.split('\n')) {
    const id = /\bid=(\d+)/.exec(line)?.[1];
    const name = /\bname=(\S*)/.exec(line)?.[1] ?? '';
    if (id && name.startsWith(namePrefix)) killed += Number(await redis.client('KILL', 'ID', id));
  }
  return killed;
}

describe('read loop edges', () => {
  const { redis, closers } = testContext();

  it('a reconnect of the reader never spends the delivery budget of an entry still running, and a failure still gets its retries', async () => {
    const stream = unique('reconnect');
    const runs: Array<{ deliveries: number; ok: boolean }> = [];
    let releaseFirst!: () => void;
    const firstGate = new Promise<void>((resolve) => (releaseFirst = resolve));
    @Controller()
    class FailsOnce {
      @EventPattern(stream, { concurrency: 2, maxDeliveries: 3, minIdleTimeMs: 500 })
      async handle(@Ctx() ctx: RedisStreamsContext) {
        const first = runs.length === 0;
        runs.push({ deliveries: ctx.getDeliveryCount(), ok: !first });
        if (first) {
          await firstGate;
          throw new Error('transient failure');
        }
      }
    }
    const { app, server } = await startMicroservice([FailsOnce], { reclaimIntervalMs: 100, retryBackoffMs: 50 });
    closers.push(() => app.close());
    const id = (await redis.xadd(stream, '*', 'n', '1'))!;
    await waitFor(() => runs.length === 1, 'the handler to start');
    const [consumer] = server.getConsumers();
    for (let kill = 1; kill <= 3; kill++) {
      const readsBefore = consumer.lastReadAt;
      expect(await killConnections(redis, `nrs:reader:${stream}`)).toBe(1);
      // Reconnected and back at reading: the replay of the own PEL has run.
      await waitFor(() => consumer.lastReadAt > readsBefore, `a read after kill ${kill}`);
      await waitFor(
        async () => ((await redis.client('LIST')) as string).includes(`name=nrs:reader:${stream}`),
        'the reader to reconnect',
      );
    }
    expect(await deliveriesOf(redis, stream, 'nest', id)).toBe(1);
    releaseFirst();
    await waitFor(() => runs.length === 2, 'the retry');
    expect(runs).toEqual([
      { deliveries: 1, ok: false },
      { deliveries: 2, ok: true },
    ]);
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 0, 'the retry acked');
    expect(await redis.xlen(`${stream}:dlq`)).toBe(0);
  });

  it('a reconnect replays an entry whose read reply was lost, counting its delivery once when it runs', async () => {
    const stream = unique('orphan');
    const seen: Array<[string, number]> = [];
    const { app } = await startMicroservice([recorderController(stream, seen)], { consumer: 'pod-o', reclaimIntervalMs: 0 });
    closers.push(() => app.close());
    // An entry delivered to this consumer whose reply never reached it (as if the connection
    // broke after Redis answered): while the reader reconnects, the entry goes into the
    // consumer's own PEL with 1 delivery and no handler runs it.
    expect(await killConnections(redis, `nrs:reader:${stream}`)).toBe(1);
    const id = (await redis.xadd(stream, '*', 'n', 'lost-reply'))!;
    const stray = new Redis(redisUrl());
    const [[, delivered]] = (await stray.xreadgroup('GROUP', 'nest', 'pod-o', 'COUNT', 1, 'STREAMS', stream, '>')) as Array<
      [string, unknown[]]
    >;
    await stray.quit();
    expect(delivered).toHaveLength(1);
    await waitFor(() => seen.length === 1, 'the replayed entry');
    expect(seen).toEqual([[id, 2]]);
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 0, 'acked');
  });

  it('a user commandTimeout shorter than blockMs does not abandon blocking reads', async () => {
    const stream = unique('cmd-timeout');
    const seen: Array<[string, number]> = [];
    const url = new URL(redisUrl());
    const { app, server } = await startMicroservice([recorderController(stream, seen)], {
      connection: { host: url.hostname, port: Number(url.port), commandTimeout: 100 },
      blockMs: 1_000,
      reclaimIntervalMs: 0,
    });
    closers.push(() => app.close());
    const [consumer] = server.getConsumers();
    // Let a few blocking reads pass their commandTimeout; then entries arrive mid-block.
    const firstRead = consumer.lastReadAt;
    await waitFor(() => consumer.lastReadAt > firstRead, 'a blocking read to complete', 5_000);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await redis.xadd(stream, '*', 'n', String(i)))!);
      await new Promise((r) => setTimeout(r, 150));
    }
    await waitFor(() => seen.length === 5, 'every entry handled without a reclaimer', 5_000);
    expect(seen).toEqual(ids.map((id) => [id, 1]));
  });

  it('keeps connection listeners registered with on() before listen()', async () => {
    const stream = unique('early-on');
    const server = new RedisStreamsServer({ connection: redisUrl(), blockMs: 200 });
    const ready: string[] = [];
    server.on('ready', () => ready.push('ready'));
    const { app } = await startMicroserviceWith(server, recorderController(stream, []));
    closers.push(() => app.close());
    // The commands connection and the reader each report ready once.
    await waitFor(() => ready.length >= 2, 'the early listener to fire');
    expect(await killConnections(redis, `nrs:reader:${stream}`)).toBe(1);
    await waitFor(() => ready.length >= 3, 'the listener to fire on the reconnect too');
  });

  it('drops a claimed entry that was acked before its delivery count was read (count 0), instead of running it again', async () => {
    const stream = unique('count-zero');
    const seen: Array<[string, number]> = [];
    // The entries went to a consumer that died before the server started: nothing new to read.
    await redis.xgroup('CREATE', stream, 'nest', '0', 'MKSTREAM');
    const acked = (await redis.xadd(stream, '*', 'n', 'acked-meanwhile'))!;
    const stale = (await redis.xadd(stream, '*', 'n', 'stale'))!;
    await redis.xreadgroup('GROUP', 'nest', 'ghost', 'COUNT', 2, 'STREAMS', stream, '>');
    const { app, server } = await startMicroservice([recorderController(stream, seen)], { reclaimIntervalMs: 0 });
    closers.push(() => app.close());
    // White-box: the engine itself (getConsumers() is read-only), handed a claim as the reclaimer does.
    const [consumer] = server['consumers'];
    // Claimed the way the reclaimer does: JUSTID, the delivery is counted when the handler starts.
    const claimed = (await redis.xautoclaim(stream, 'nest', consumer.consumer, 0, '0-0', 'COUNT', 10, 'JUSTID')) as [
      string,
      string[],
    ];
    // The old owner finishes and acks between the claim and the count read.
    await redis.xack(stream, 'nest', acked);
    expect(await consumer.acceptClaimed(claimed[1])).toBe(1);
    await waitFor(() => seen.length === 1, 'the stale entry');
    expect(seen).toEqual([[stale, 2]]);
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 0, 'acked');
  });

  it('a handler that acks manually twice gets an answer for both calls', async () => {
    const stream = unique('double-ack');
    const answers: boolean[][] = [];
    @Controller()
    class AcksTwice {
      @EventPattern(stream, { ackMode: 'manual' })
      async handle(@Ctx() ctx: RedisStreamsContext) {
        answers.push(await Promise.all([ctx.ack(), ctx.ack()]));
      }
    }
    const { app } = await startMicroservice([AcksTwice], { reclaimIntervalMs: 0 });
    closers.push(() => app.close());
    await redis.xadd(stream, '*', 'n', '1');
    await waitFor(() => answers.length === 1, 'both ack calls to settle', 5_000);
    expect(answers).toEqual([[true, true]]);
    expect(await pendingCount(redis, stream, 'nest')).toBe(0);
  });
});

function recorderController(stream: string, seen: Array<[string, number]>) {
  @Controller()
  class Recorder {
    @EventPattern(stream)
    handle(@Payload() _data: unknown, @Ctx() ctx: RedisStreamsContext) {
      seen.push([ctx.getEntryId(), ctx.getDeliveryCount()]);
    }
  }
  return Recorder;
}

async function startMicroserviceWith(server: RedisStreamsServer, controller: ReturnType<typeof recorderController>) {
  const { NestFactory } = await import('@nestjs/core');
  const { Module } = await import('@nestjs/common');
  @Module({ controllers: [controller] })
  class EarlyModule {}
  const app = await NestFactory.createMicroservice(EarlyModule, { strategy: server, logger: false });
  await app.listen();
  return { app };
}
