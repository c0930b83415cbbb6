import { createHash } from 'node:crypto';
import { Controller } from '@nestjs/common';
import { Ctx, EventPattern } from '@nestjs/microservices';
import type { Command, Redis } from 'ioredis';
import type { RedisStreamsContext, RedisStreamsServer } from 'nest-redis-streams';
import { RUN_OR_HOLD } from '../../libs/nest-redis-streams/src/redis/lua/block-key.js';
import { startMicroservice, testContext, unique, waitFor } from '../support/helpers.js';

type PendingRow = [id: string, consumer: string, idleMs: number, deliveries: number];
type Run = [consumer: string, deliveries: number];

/**
 * Holds back, in this process, the reply of every run-or-hold script (the key's turn of a
 * block-key entry) sent on the server's commands connection, until `release()`: the turn stays
 * in flight for as long as a test needs, whatever the machine's speed.
 */
function holdTurns(server: RedisStreamsServer) {
  const sha = createHash('sha1').update(RUN_OR_HOLD).digest('hex');
  const commands = server.unwrap<Redis>();
  const send = commands.sendCommand.bind(commands);
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let held = 0;
  commands.sendCommand = (command: Command, ...rest: unknown[]) => {
    const result = (send as (...args: unknown[]) => unknown)(command, ...rest);
    if (command.args[0] === sha || command.args[0] === RUN_OR_HOLD) {
      // A NOSCRIPT error passes at once: the script is sent again as EVAL, and that reply is held.
      command.promise = command.promise.then(async (reply: unknown) => {
        held++;
        await released;
        return reply;
      });
    }
    return result;
  };
  return { held: () => held, release };
}

// Issue 38 follow-up: a block-key entry passes the ownership gate, then asks for its key's turn
// (a script, a round trip). A stop that began during that round trip hands the entry back as
// unstarted; the handler must not start it afterwards, or the next consumer runs it a second time.
describe("onDeadLetter: 'block-key': a stop while an entry waits for its key's turn", () => {
  const { redis, closers } = testContext();
  const pending = async (stream: string) =>
    ((await redis.xpending(stream, 'nest', '-', '+', 10)) as PendingRow[]).map(([id, owner, , n]) => [id, owner, Number(n)]);

  function recorder(stream: string, runs: Run[]) {
    @Controller()
    class Recorder {
      @EventPattern(stream, { orderingKey: 'k', onDeadLetter: 'block-key' })
      handle(@Ctx() ctx: RedisStreamsContext) {
        runs.push([ctx.getConsumer(), ctx.getDeliveryCount()]);
      }
    }
    return Recorder;
  }

  const options = { minIdleTimeMs: 300, reclaimIntervalMs: 100 };

  /** Consumer a, with the turn of the one entry added in flight (its reply held back). */
  async function turnInFlight(stream: string, runs: Run[], shutdownTimeoutMs: number) {
    const a = await startMicroservice([recorder(stream, runs)], { ...options, consumer: 'a', shutdownTimeoutMs });
    closers.push(() => a.app.close());
    const turns = holdTurns(a.server);
    const id = (await redis.xadd(stream, '*', 'k', 'A'))!;
    await waitFor(() => turns.held() === 1, 'the key’s turn answered and held back');
    return { a, turns, id };
  }

  /** Consumer b takes what a handed back and runs it. */
  async function nextConsumerRuns(stream: string, runs: Run[]) {
    const b = await startMicroservice([recorder(stream, runs)], { ...options, consumer: 'b' });
    closers.push(() => b.app.close());
    await waitFor(async () => runs.length > 0 && (await pending(stream)).length === 0, 'the entry run and acked');
  }

  it('answered after the stop handed the entry back: never started there, run once by the next consumer on its first delivery', async () => {
    const stream = unique('bk-stop-turn-late');
    const runs: Run[] = [];
    const { a, turns, id } = await turnInFlight(stream, runs, 100);
    await a.app.close();
    // Handed back unstarted: the delivery its read counted was given back.
    expect(await pending(stream)).toEqual([[id, 'a', 0]]);
    turns.release();
    await nextConsumerRuns(stream, runs);
    expect(runs).toEqual([['b', 1]]);
  });

  it('answered while the stop waits for running handlers: not started, handed back with its count given back', async () => {
    const stream = unique('bk-stop-turn-early');
    const runs: Run[] = [];
    const { a, turns, id } = await turnInFlight(stream, runs, 10_000);
    // close() stops every start at once (no await before it), then waits for what holds a slot.
    const closing = a.server.close();
    turns.release();
    await closing;
    expect(runs).toEqual([]);
    expect(await pending(stream)).toEqual([[id, 'a', 0]]);
    await nextConsumerRuns(stream, runs);
    expect(runs).toEqual([['b', 1]]);
  });
});
