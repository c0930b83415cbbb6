// A consumer process of the ownership chaos specs (test/chaos/ownership-*.spec.ts): one
// RedisStreamsServer whose handler reads STREAM's PARTITIONS partitions with exclusive ownership
// and writes what it does to the ledger (a redis-server the suite never kills).
// MODE=ledger: every run appends `start` and `end` records to one ledger list (one total order
// across processes), so the spec can prove that no key ever ran on two instances at once and that
// each key's sequence numbers never went backwards.
// CLUSTER_NODES (JSON list of { host, port }): the data Redis is a Redis Cluster instead of DATA_URL.
// CONCURRENCY / ORDERED=1: parallel handlers, a key's entries in order (orderingKey 'key').
// POISON=1: maxDeliveries 2, and a run of an entry listed in the ledger's poison set (`key:seq`)
// fails after its start record, with a `fail` record. BLOCK_KEY=1 (with ORDERED=1): onDeadLetter 'block-key'.
// MODE=nonce: the notes' relayer. A nonce comes from a plain counter (GET, then SET: no INCR), so
// two instances running at once would issue a nonce twice; an entry that already got one keeps it.
import 'reflect-metadata';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { Redis } from 'ioredis';
import { RedisStreamsContext, RedisStreamsServer } from 'nest-redis-streams';
import { ownershipLedger } from './ownership-ledger.js';

const env = process.env;
const run = env.RUN!;
const consumer = env.CONSUMER!;
const handlerMs = Number(env.HANDLER_MS ?? 5);
const ledger = new Redis(env.LEDGER_URL!, { maxRetriesPerRequest: null });
ledger.on('error', () => undefined);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const keys = ownershipLedger(run);

interface Item {
  key: string;
  seq: string;
  slowMs?: string;
}

async function recordRun(item: Item, ctx: RedisStreamsContext): Promise<void> {
  const tag = `${consumer}|${item.key}|${item.seq}|${ctx.getStream()}`;
  await ledger.rpush(keys.log, `start|${tag}`);
  if (env.POISON === '1' && (await ledger.sismember(keys.poison, `${item.key}:${item.seq}`)) === 1) {
    await ledger.rpush(keys.log, `fail|${tag}`);
    throw new Error(`${item.key}:${item.seq} is poison`);
  }
  await sleep(Number(item.slowMs ?? handlerMs));
  // A handler that lost its partition while it ran says so instead of claiming the effect.
  await ledger.rpush(keys.log, `${ctx.getSignal().aborted ? 'aborted' : 'end'}|${tag}`);
}

async function issueNonce(item: Item): Promise<void> {
  const entry = `${item.key}:${item.seq}`;
  if ((await ledger.hget(keys.byEntry, entry)) !== null) return;
  const nonce = Number((await ledger.get(keys.counter)) ?? 0);
  await sleep(handlerMs); // the window in which a second active instance would read the same value
  await ledger
    .multi()
    .set(keys.counter, nonce + 1)
    .hset(keys.byEntry, entry, nonce)
    .rpush(keys.issued, `${nonce}|${entry}`)
    .exec();
}

@Controller()
class OwnershipHandlers {
  @EventPattern(env.STREAM!, {
    group: 'g',
    partitions: Number(env.PARTITIONS ?? 12),
    // OWNERSHIP=shared: the control run, every instance reads the partition.
    ownership: env.OWNERSHIP === 'shared' ? 'shared' : 'exclusive',
    ownershipLeaseMs: Number(env.LEASE_MS ?? 1_500),
    // CONCURRENCY > 1 with ORDERED=1: a key's later entries wait behind its running one.
    concurrency: Number(env.CONCURRENCY ?? 1),
    ...(env.ORDERED === '1' ? { orderingKey: 'key' } : {}),
    ...(env.POISON === '1' ? { maxDeliveries: 2 } : {}),
    ...(env.BLOCK_KEY === '1' ? { onDeadLetter: 'block-key' as const } : {}),
  })
  handle(@Payload() item: Item, @Ctx() ctx: RedisStreamsContext) {
    return env.MODE === 'nonce' ? issueNonce(item) : recordRun(item, ctx);
  }
}

@Module({ controllers: [OwnershipHandlers] })
class OwnershipModule {}

async function main(): Promise<void> {
  const server = new RedisStreamsServer({
    connection: env.CLUSTER_NODES
      ? { cluster: JSON.parse(env.CLUSTER_NODES), clusterOptions: { redisOptions: { maxRetriesPerRequest: null } } }
      : env.DATA_URL,
    consumer,
    blockMs: 300,
    minIdleTimeMs: Number(env.MIN_IDLE ?? 1_000),
    reclaimIntervalMs: 250,
    retryBackoffMs: 50,
  });
  const count = (name: string) => void ledger.hincrby(keys.stats, `${consumer}:${name}`, 1).catch(() => undefined);
  server.events.on('rebalanced', (e) => process.send?.({ type: 'owned', owned: e.owned }));
  server.events.on('partition-revoked', (e) => count(`revoked-${e.reason}`));
  server.events.on('partition-assigned', (e) => {
    count('assigned');
    // In the run log too: a spec can tell a start under a new grant from one under a lost grant.
    void ledger.rpush(keys.log, `mark|assigned|${consumer}|${e.generation}|${e.stream}`).catch(() => undefined);
  });
  // An ack or a lease renewal refused: the entry is another consumer's (or its partition another instance's).
  server.events.on('lease-lost', () => count('writes-refused'));
  server.events.on('acked', (e) => void ledger.hincrby(keys.stats, `${consumer}:acked`, e.count).catch(() => undefined));
  const app = await NestFactory.createMicroservice(OwnershipModule, {
    strategy: server,
    logger: env.LOGS === '1' ? undefined : false,
  });
  await app.listen();
  process.send?.({ type: 'ready', member: server.getOwnership()[0]?.member, owned: server.getOwnership()[0]?.owned });
  process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
}

main().catch((err: Error) => {
  process.send?.({ type: 'error', message: err.stack ?? String(err) }, () => process.exit(1));
});
