import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import type { RedisStreamsContext, RedisStreamsServerOptions, StreamHandlerOptions } from 'nest-redis-streams';
import { startMicroservice } from '../support/helpers.js';

/** A gate a handler waits at: `open()` lets it go on, `fail()` makes it throw there. */
export interface Gate {
  wait: Promise<void>;
  open(): void;
  fail(error: Error): void;
}

export function gate(): Gate {
  let open!: () => void;
  let fail!: (error: Error) => void;
  const wait = new Promise<void>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { wait, open, fail };
}

/** What a gated block-key consumer does with each run `k:n`. */
export interface GatedPlan {
  /** Runs to fail, by `k:n`: how many failures are still to come. */
  failures?: Map<string, number>;
  /** Runs that wait at a gate (once) before going on. */
  gates?: Map<string, Gate>;
  /** Runs that call ctx.ack() first; what it threw is recorded in `ackErrors`. */
  ackFirst?: Set<string>;
}

/**
 * A block-key consumer of foreign entries `{ k, n }` whose runs can be held at gates: `started`
 * records every run as it starts, `done` every run that succeeded, both in order.
 */
export async function startGatedConsumer(
  closers: Array<() => Promise<unknown>>,
  stream: string,
  plan: GatedPlan,
  handlerOptions: StreamHandlerOptions = {},
  serverOptions: Partial<RedisStreamsServerOptions> = {},
) {
  const [started, done, ackErrors] = [[] as string[], [] as string[], [] as string[]];
  const { failures = new Map<string, number>(), gates = new Map<string, Gate>(), ackFirst = new Set<string>() } = plan;
  @Controller()
  class GatedHandler {
    @EventPattern(stream, { orderingKey: 'k', onDeadLetter: 'block-key', maxDeliveries: 2, ...handlerOptions })
    async handle(@Payload() data: { k: string; n: string }, @Ctx() ctx: RedisStreamsContext) {
      const name = `${data.k}:${data.n}`;
      started.push(name);
      const waitAt = gates.get(name);
      gates.delete(name);
      if (waitAt) await waitAt.wait;
      if (ackFirst.has(name)) {
        try {
          await ctx.ack();
        } catch (err) {
          ackErrors.push((err as Error).message);
        }
      }
      const left = failures.get(name) ?? 0;
      if (left > 0) {
        failures.set(name, left - 1);
        throw new Error(`${name} is poison`);
      }
      done.push(name);
    }
  }
  const options = { reclaimIntervalMs: 50, retryBackoffMs: 10, minIdleTimeMs: 1_000, ...serverOptions };
  const app = await startMicroservice([GatedHandler], options);
  closers.push(() => app.app.close());
  return { ...app, started, done, ackErrors };
}
