import { Controller } from '@nestjs/common';
import { EventPattern } from '@nestjs/microservices';
import { type RedisStreamsServerOptions, streamPattern } from 'nest-redis-streams';
import { startMicroservice, testContext, unique, waitFor } from '../support/helpers.js';

type PendingRow = [id: string, consumer: string, idleMs: number, deliveries: number];

const MIN_IDLE = 600;
const MAX_HANDLER = 900;

/**
 * Issue 24, item 9: past maxHandlerMs a hung handler's lease is no longer renewed, so its entry
 * turns idle and another instance may take it over. The hung consumer's own reclaimer claimed it
 * back to itself every round (XAUTOCLAIM resets the idle time) and ignored it as already held, so
 * another instance got it only when its round came first. A consumer must hand back an entry it
 * still holds: its idle stays at min-idle or more, and the healthy instance's round takes it.
 */
describe('a hung handler past maxHandlerMs', () => {
  const { redis, closers } = testContext();

  const handlers = (stream: string, batch: boolean, hung: boolean, ran: string[], name: string) => {
    const options = { group: 'g', minIdleTimeMs: MIN_IDLE, maxHandlerMs: MAX_HANDLER };
    @Controller()
    class Handlers {
      @EventPattern(
        batch ? streamPattern(stream) : stream,
        batch ? { ...options, batch: { maxSize: 1, maxWaitMs: 10 } } : options,
      )
      handle() {
        ran.push(name);
        // The hung one never ends by itself (its abort signal is ignored, as a stuck call would).
        return hung ? new Promise(() => undefined) : undefined;
      }
    }
    return Handlers;
  };

  async function start(
    stream: string,
    batch: boolean,
    name: string,
    hung: boolean,
    ran: string[],
    options: RedisStreamsServerOptions,
  ) {
    const started = await startMicroservice([handlers(stream, batch, hung, ran, name)], {
      consumer: name,
      shutdownTimeoutMs: 100,
      ...options,
    });
    closers.push(() => started.app.close());
    return started.server;
  }

  const pending = async (stream: string) => ((await redis.xpending(stream, 'g', '-', '+', 10)) as PendingRow[])[0];

  it.each([{ batch: false }, { batch: true }])(
    'its own reclaim round hands the entry back instead of keeping it (batch: $batch)',
    async ({ batch }) => {
      const stream = unique(`hung-own-${batch}`);
      const ran: string[] = [];
      // Reclaim rounds are run by hand: the order of the rounds is the test's.
      const hungServer = await start(stream, batch, 'hung', true, ran, { reclaimIntervalMs: 0 });
      const id = await redis.xadd(stream, '*', 'data', '{"n":1}');
      await waitFor(() => ran.length === 1, 'the hung handler started');
      const healthy = await start(stream, batch, 'healthy', false, ran, { reclaimIntervalMs: 0 });
      await waitFor(
        async () => (await pending(stream))?.[2] >= MIN_IDLE,
        'the hung entry idle past min-idle',
        MAX_HANDLER + MIN_IDLE * 5,
      );
      // The hung consumer's round comes first (as it did every time in the reported runs).
      await hungServer.reclaimNow();
      const [rowId, owner, idle] = await pending(stream);
      expect([rowId, owner]).toEqual([id, 'hung']);
      expect(idle).toBeGreaterThanOrEqual(MIN_IDLE);
      expect(await healthy.reclaimNow()).toBe(1);
      await waitFor(() => ran.includes('healthy'), 'the healthy instance ran the entry');
      await waitFor(async () => (await pending(stream)) === undefined, 'the entry acked');
      expect(ran).toEqual(['hung', 'healthy']);
    },
    30_000,
  );

  it.each([{ batch: false }, { batch: true }])(
    'a healthy instance runs the entry within a bounded time with the default reclaim cadence (batch: $batch)',
    async ({ batch }) => {
      const stream = unique(`hung-cadence-${batch}`);
      const ran: string[] = [];
      // The defaults' ratio: a reclaim round every sixth of min-idle (5 s against 30 s).
      const cadence = { reclaimIntervalMs: MIN_IDLE / 6 };
      await start(stream, batch, 'hung', true, ran, cadence);
      await redis.xadd(stream, '*', 'data', '{"n":1}');
      await waitFor(() => ran.length === 1, 'the hung handler started');
      await start(stream, batch, 'healthy', false, ran, cadence);
      // maxHandlerMs, then min-idle, then a few rounds of either instance.
      await waitFor(() => ran.includes('healthy'), 'the healthy instance ran the entry', MAX_HANDLER + MIN_IDLE * 8);
      await waitFor(async () => (await pending(stream)) === undefined, 'the entry acked');
    },
    30_000,
  );
});
