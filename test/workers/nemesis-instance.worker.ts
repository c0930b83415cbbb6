// One instance of the nemesis harness's fleet (test/nemesis): a RedisStreamsServer with a handler
// per group of NEMESIS_GROUPS on one partitioned stream, each writing to the run's history what it
// starts, finishes, fails and retries later. What a handler does with an event is said by the
// event's payload (NemesisPayload), so the seed decides the workload. Configured by environment:
// NEMESIS_DIR (the run's directory), NEMESIS_OPTIONS (WorkloadOptions as JSON), CONSUMER, DATA_URL.
import 'reflect-metadata';
import { existsSync } from 'node:fs';
import { Controller, Module, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { RedisStreamsContext, RedisStreamsServer, RetryLater } from 'nest-redis-streams';
import {
  HistoryWriter,
  NEMESIS_GROUPS,
  type NemesisPayload,
  type WorkloadOptions,
  firstTime,
  nemesisPaths,
} from './nemesis-history.js';

const env = process.env;
const dir = env.NEMESIS_DIR!;
const options = JSON.parse(env.NEMESIS_OPTIONS!) as WorkloadOptions;
const history = new HistoryWriter(dir, env.CONSUMER!);
const paths = nemesisPaths(dir);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function behave(group: string, item: NemesisPayload, ctx: RedisStreamsContext): Promise<void> {
  if (item.slowMs) await sleep(item.slowMs);
  const eventId = ctx.getEventId()!;
  if (item.poison && !existsSync(paths.fixed(eventId))) throw new Error(`${eventId} is poison until fixed`);
  if (item.failFirst && ctx.getDeliveryCount() <= item.failFirst) throw new Error(`${eventId} fails its first deliveries`);
  if (item.retryLaterMs !== undefined && firstTime(paths.retriedLater(group, eventId))) throw new RetryLater(item.retryLaterMs);
}

async function handle(group: string, item: NemesisPayload, ctx: RedisStreamsContext): Promise<void> {
  const about = {
    group,
    eventId: ctx.getEventId(),
    key: item.key,
    seq: item.seq,
    entryId: ctx.getEntryId(),
    stream: ctx.getStream(),
    delivery: ctx.getDeliveryCount(),
  };
  history.write({ kind: 'start', ...about });
  try {
    await behave(group, item, ctx);
  } catch (err) {
    history.write({ kind: err instanceof RetryLater ? 'retry-later' : 'fail', ...about });
    throw err;
  }
  history.write({ kind: 'finish', ...about });
}

const shared = {
  partitions: options.partitions,
  concurrency: options.concurrency,
  maxDeliveries: options.maxDeliveries,
};
const exclusive = { ...shared, ownership: 'exclusive' as const, ownershipLeaseMs: options.ownershipLeaseMs, orderingKey: 'key' };
const handlerOptions: Record<string, object> = {
  [NEMESIS_GROUPS.plain]: shared,
  [NEMESIS_GROUPS.keyed]: exclusive,
  [NEMESIS_GROUPS.blocked]: { ...exclusive, onDeadLetter: 'block-key' as const },
};

/** One controller per group: a class per group keeps Nest's handler chaining out of the way. */
function groupController(group: string): Type {
  @Controller()
  class GroupHandlers {
    @EventPattern(options.stream, { group, ...handlerOptions[group] })
    handle(@Payload() item: NemesisPayload, @Ctx() ctx: RedisStreamsContext) {
      return handle(group, item, ctx);
    }
  }
  Object.defineProperty(GroupHandlers, 'name', { value: `NemesisHandlers_${group}` });
  return GroupHandlers;
}

@Module({ controllers: Object.values(NEMESIS_GROUPS).map(groupController) })
class NemesisModule {}

async function main(): Promise<void> {
  const server = new RedisStreamsServer({
    connection: env.DATA_URL,
    consumer: env.CONSUMER,
    blockMs: 300,
    minIdleTimeMs: options.minIdleTimeMs,
    retryBackoffMs: options.retryBackoffMs,
    reclaimIntervalMs: 200,
    scheduleCheckMs: 200,
    shutdownTimeoutMs: 3_000,
  });
  const app = await NestFactory.createMicroservice(NemesisModule, {
    strategy: server,
    logger: env.LOGS === '1' ? undefined : false,
  });
  await app.listen();
  process.send?.({ type: 'ready' });
  process.once('SIGTERM', () => {
    void app
      .close()
      .then(() => process.exit(0))
      .catch(() => process.exit(1));
  });
}

main().catch((err: Error) => {
  process.send?.({ type: 'error', message: err.stack ?? String(err) }, () => process.exit(1));
});
