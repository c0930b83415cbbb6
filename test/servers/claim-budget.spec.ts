import { Controller } from '@nestjs/common';
import { Ctx, EventPattern } from '@nestjs/microservices';
import type { RedisStreamsContext } from 'nest-redis-streams';
import type { RedisStreamsServer } from 'nest-redis-streams';
import { startMicroservice, testContext, unique, waitFor } from '../support/helpers.js';
import { capabilitiesOf } from './capabilities-of.js';

jest.setTimeout(60_000);

type PendingRow = [id: string, consumer: string, idleMs: number, deliveries: number];

// The guide's promise: an entry the library takes over (or reads ahead) is counted when its handler
// starts, so a deploy never spends the budget of what it did not run. Where every node has
// XREADGROUP CLAIM (Redis 8.4+, the default `claimReads`) the read loop takes entries over with a
// read that counts a delivery of each; elsewhere the reclaimer's XAUTOCLAIM JUSTID does, which
// does not. Each test asserts the same promise on either path: which one ran is the server's.
describe('the delivery budget of entries taken over or read ahead and never started', () => {
  const { redis, closers } = testContext();
  const has = capabilitiesOf(redis);

  /** Six entries delivered once to a consumer that then died. */
  async function deadConsumerEntries(stream: string, fields: string[] = []): Promise<string[]> {
    await redis.xgroup('CREATE', stream, 'nest', '0', 'MKSTREAM');
    const ids: string[] = [];
    for (let n = 1; n <= 6; n++) ids.push((await redis.xadd(stream, '*', ...fields, 'n', String(n)))!);
    await redis.xreadgroup('GROUP', 'nest', 'dead', 'COUNT', 6, 'STREAMS', stream, '>');
    return ids;
  }

  const pending = async (stream: string) => (await redis.xpending(stream, 'nest', '-', '+', 100)) as PendingRow[];

  /** A handler whose first run waits for `release` (the deploy comes while it runs). */
  function recorder(stream: string, options: object, runs: Array<[string, number]>, held: Promise<void>) {
    @Controller()
    class Recorder {
      @EventPattern(stream, options)
      async handle(@Ctx() ctx: RedisStreamsContext) {
        runs.push([ctx.getEntryId(), ctx.getDeliveryCount()]);
        if (runs.length === 1) await held;
      }
    }
    return Recorder;
  }

  /** Where the read cannot take entries over, only a reclaim round does (one a minute otherwise). */
  async function takeOver(server: RedisStreamsServer, done: () => boolean, what: string): Promise<void> {
    await waitFor(async () => {
      if (!has().claim) await server.reclaimNow();
      return done();
    }, what);
  }

  /**
   * A deploy: instance A runs the first entry (which hangs past shutdownTimeoutMs) and is stopped;
   * B, with the same options, takes over whatever A handed back. Returns B's runs and parks.
   */
  async function deploy(stream: string, options: object, beforeA: () => Promise<void> = async () => undefined) {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    closers.push(async () => release());
    const runsA: Array<[string, number]> = [];
    const a = await startMicroservice([recorder(stream, options, runsA, held)], {
      consumer: 'a',
      minIdleTimeMs: 300,
      reclaimIntervalMs: 60_000,
      shutdownTimeoutMs: 200,
    });
    await beforeA();
    await takeOver(a.server, () => runsA.length === 1, 'A to start the first entry');
    const startedInA = await pending(stream);
    await a.app.close();
    const runsB: Array<[string, number]> = [];
    const parkedB: Array<[string, number]> = [];
    const b = await startMicroservice([recorder(stream, options, runsB, Promise.resolve())], {
      consumer: 'b',
      minIdleTimeMs: 300,
      reclaimIntervalMs: 60_000,
    });
    closers.push(() => b.app.close());
    b.server.events.on('dead-lettered', (e) => parkedB.push([e.id, e.deliveries]));
    await takeOver(b.server, () => runsB.length + parkedB.length === 6, 'B to run or park all six');
    return { runsA, startedInA, runsB, parkedB };
  }

  it('a consumer that takes a dead consumer’s entries over counts a delivery only of the one it starts', async () => {
    const stream = unique('claim-budget-start');
    const ids = await deadConsumerEntries(stream);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    closers.push(async () => release());
    const runs: Array<[string, number]> = [];
    const { app, server } = await startMicroservice([recorder(stream, { concurrency: 1 }, runs, held)], {
      consumer: 'a',
      minIdleTimeMs: 300,
      reclaimIntervalMs: 60_000,
    });
    closers.push(() => app.close());
    await takeOver(server, () => runs.length === 1, 'the first entry running');
    // More CLAIM reads are due (one a second at most) while the first entry runs: none may count
    // a delivery of an entry that cannot start.
    const since = Date.now();
    await waitFor(() => Date.now() - since > 1_500, 'a second and a half of reads');
    const rows = (await pending(stream)).map(([id, owner, , n]) => [id, owner, Number(n)]);
    // With CLAIM the read took over only what could start; the reclaimer took all six into its
    // reserve without counting. Either way only the running entry has spent a delivery here.
    const others = has().claim ? 'dead' : 'a';
    expect(rows).toEqual([[ids[0], 'a', 2], ...ids.slice(1).map((id) => [id, others, 1])]);
    release();
    await waitFor(() => runs.length === 6, 'all six run');
    expect(runs).toEqual(ids.map((id) => [id, 2]));
  });

  it('a deploy that hands taken-over entries on spends no delivery of those it never started (the issue’s six)', async () => {
    const stream = unique('claim-budget-deploy');
    const ids = await deadConsumerEntries(stream);
    const { runsA, runsB, parkedB } = await deploy(stream, { concurrency: 1, maxDeliveries: 2 });
    expect(runsA).toEqual([[ids[0], 2]]);
    // The one A ran has had its two deliveries; the five others run in B, on their second.
    expect(parkedB).toEqual([[ids[0], 3]]);
    expect(runsB).toEqual(ids.slice(1).map((id) => [id, 2]));
  });

  it('entries counted on start but queued behind their ordering key get that delivery back when a deploy hands them on', async () => {
    const stream = unique('claim-budget-key');
    const ids = await deadConsumerEntries(stream, ['k', 'same']);
    // Six slots: all six are taken over and counted as they take a slot, then five wait for the
    // first of their key, which hangs until A stops.
    const options = { concurrency: 6, orderingKey: 'k', maxDeliveries: 2 };
    const { runsA, startedInA, runsB, parkedB } = await deploy(stream, options);
    expect(runsA).toEqual([[ids[0], 2]]);
    expect(startedInA.map(([id, owner, , n]) => [id, owner, Number(n)])).toEqual(ids.map((id) => [id, 'a', 2]));
    expect(parkedB).toEqual([[ids[0], 3]]);
    expect(runsB).toEqual(ids.slice(1).map((id) => [id, 2]));
  });

  it('entries read ahead and never started keep their whole budget through a deploy (maxDeliveries: 1)', async () => {
    const stream = unique('claim-budget-read-ahead');
    await redis.xgroup('CREATE', stream, 'nest', '0', 'MKSTREAM');
    const ids: string[] = [];
    const { runsA, runsB, parkedB } = await deploy(stream, { concurrency: 1, maxDeliveries: 1 }, async () => {
      for (let n = 1; n <= 6; n++) ids.push((await redis.xadd(stream, '*', 'n', String(n)))!);
    });
    expect(runsA).toEqual([[ids[0], 1]]);
    expect(parkedB).toEqual([[ids[0], 2]]);
    expect(runsB).toEqual(ids.slice(1).map((id) => [id, 1]));
    await waitFor(async () => (await pending(stream)).length === 0, 'the acks');
  });
});
