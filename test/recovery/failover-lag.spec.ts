import { Controller } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { HealthIndicatorService } from '@nestjs/terminus';
import { Redis } from 'ioredis';
import { RedisStreamsHealthIndicator, collectStreamStats } from 'nest-redis-streams';
import { withStreamScripts } from '../../libs/nest-redis-streams/src/redis/scripts.js';
import { pairsToObject } from '../../libs/nest-redis-streams/src/redis/replies.js';
import { pendingCount, startMicroservice, unique, waitFor } from '../support/helpers.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startRedis } = require('../../scripts/lib/redis-process.cjs');

jest.setTimeout(30_000);

interface RedisProcess {
  url: string;
  port: number;
  kill(signal?: string): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A master and its replica; the master is killed and the replica promoted, as a failover does.
 * On Redis 7.0 the replica's groups keep the entries-read counter they were created (or last
 * synced) with: the replicated XCLAIM … LASTID moves last-delivered-id only. Redis' own lag then
 * stays at the number of entries the master's group read, for good.
 */
describe('lag after a replica is promoted', () => {
  let master: RedisProcess;
  let replica: RedisProcess;
  const clients: Redis[] = [];
  const closers: Array<() => Promise<unknown>> = [];
  const indicator = new RedisStreamsHealthIndicator(new HealthIndicatorService());

  beforeEach(async () => {
    // No 5 s wait before a diskless full sync: the replica links at once.
    master = await startRedis({ appendonly: false, extraArgs: ['--repl-diskless-sync-delay', '0'] });
    replica = await startRedis({ appendonly: false });
  });
  afterEach(async () => {
    while (closers.length) await closers.pop()!();
    for (const client of clients.splice(0)) client.disconnect();
    await master.stop();
    await replica.stop();
  });
  const connect = (server: RedisProcess) => {
    const client = withStreamScripts(new Redis(server.url, { maxRetriesPerRequest: 1 }));
    clients.push(client);
    return client;
  };
  async function rawGroup(redis: Redis, stream: string) {
    return pairsToObject(((await redis.xinfo('GROUPS', stream)) as unknown[][])[0]);
  }
  function handler(stream: string, seen: string[]) {
    @Controller()
    class Handlers {
      @EventPattern(stream)
      handle(@Payload() data: { n: string }) {
        seen.push(data.n);
      }
    }
    return Handlers;
  }

  it('reports lag 0 once everything is handled, repairs the counter, and readiness with maxLag is up', async () => {
    const stream = unique('failover-lag');
    const onMaster = connect(master);
    const onReplica = connect(replica);
    await onReplica.call('REPLICAOF', '127.0.0.1', String(master.port));
    await waitFor(async () => /master_link_status:up/.test(await onReplica.info('replication')), 'the replica to link');
    for (let i = 0; i < 5; i++) await onMaster.xadd(stream, '*', 'n', `old-${i}`);

    // The group is created by the transport (start id 0, with ENTRIESREAD), and handles all 25 entries.
    const seen: string[] = [];
    const first = await startMicroservice([handler(stream, seen)], { connection: master.url });
    for (let i = 0; i < 20; i++) await onMaster.xadd(stream, '*', 'n', String(i));
    await waitFor(
      async () => seen.length === 25 && (await pendingCount(onMaster, stream, 'nest')) === 0,
      '25 entries handled and acked',
    );
    await first.app.close();
    expect(await onMaster.call('WAIT', '1', '5000')).toBe(1);
    expect(await rawGroup(onMaster, stream)).toMatchObject({ lag: 0, 'entries-read': 25 });

    await master.kill('SIGKILL');
    await onReplica.call('REPLICAOF', 'NO', 'ONE');
    // The defect this guards against, as Redis 7.0 shows it: nothing is waiting, Redis says 25.
    // Redis 7.2+, 8.x and Valkey replicate the counter (XCLAIM … LASTID carries ENTRIESREAD): it
    // is exact on the promoted replica. Either figure exactly, never anything in between.
    const promoted = await rawGroup(onReplica, stream);
    expect(promoted['last-delivered-id']).toBe((await onReplica.xrevrange(stream, '+', '-', 'COUNT', 1))[0][0]);
    const stale = promoted['entries-read'] !== 25;
    expect(promoted).toMatchObject(
      stale ? { pending: 0, lag: 25, 'entries-read': 0 } : { pending: 0, lag: 0, 'entries-read': 25 },
    );

    // Health figures judge by the ids: everything was delivered, so the lag is 0.
    expect(await collectStreamStats(onReplica, stream, 'nest', `${stream}:dlq`)).toMatchObject({ pending: 0, lag: 0 });

    // The repair sets the counter right on the new master, so the lag of later entries is exact too.
    expect(await onReplica.nrsRepairEntriesRead(stream, 'nest')).toBe(stale ? 25 : 0);
    expect(await onReplica.nrsRepairEntriesRead(stream, 'nest')).toBe(0);
    expect(await rawGroup(onReplica, stream)).toMatchObject({ lag: 0, 'entries-read': 25 });
    for (let i = 20; i < 27; i++) await onReplica.xadd(stream, '*', 'n', String(i));
    expect(await collectStreamStats(onReplica, stream, 'nest', `${stream}:dlq`)).toMatchObject({ pending: 0, lag: 7 });

    // A consumer on the promoted master catches up; readiness with maxLag is up.
    const second = await startMicroservice([handler(stream, seen)], { connection: replica.url });
    closers.push(() => second.app.close());
    await waitFor(
      async () => seen.length === 32 && (await pendingCount(onReplica, stream, 'nest')) === 0,
      'the 7 new entries handled',
    );
    const ready = await indicator.isReady('redis-streams', second.server, { maxLag: 5 });
    expect(ready['redis-streams'].status).toBe('up');
    expect(ready['redis-streams'].streams[0]).toMatchObject({ lag: 0, pending: 0 });
    expect(await rawGroup(onReplica, stream)).toMatchObject({ lag: 0 });
  });

  it('repairs a counter that went stale through a full resync, for a group created without ENTRIESREAD', async () => {
    const stream = unique('resync-lag');
    const onMaster = connect(master);
    const onReplica = connect(replica);
    await onMaster.xgroup('CREATE', stream, 'g', '$', 'MKSTREAM');
    for (let i = 0; i < 10; i++) await onMaster.xadd(stream, '*', 'n', String(i));
    await onMaster.xreadgroup('GROUP', 'g', 'c', 'COUNT', 100, 'STREAMS', stream, '>');
    // The replica attaches now: the full sync copies a valid counter, which it then never advances.
    await onReplica.call('REPLICAOF', '127.0.0.1', String(master.port));
    await waitFor(async () => /master_link_status:up/.test(await onReplica.info('replication')), 'the replica to link');
    for (let i = 10; i < 17; i++) await onMaster.xadd(stream, '*', 'n', String(i));
    await onMaster.xreadgroup('GROUP', 'g', 'c', 'COUNT', 100, 'STREAMS', stream, '>');
    await onMaster.xack(stream, 'g', ...(await onMaster.xrange(stream, '-', '+')).map(([id]) => id));
    expect(await onMaster.call('WAIT', '1', '5000')).toBe(1);
    await master.kill('SIGKILL');
    await onReplica.call('REPLICAOF', 'NO', 'ONE');
    // 7.0: the counter stayed at the full sync's 10, so Redis says 7 waiting; newer servers replicate it.
    const promoted = await rawGroup(onReplica, stream);
    const stale = promoted['entries-read'] !== 17;
    expect(promoted).toMatchObject(stale ? { pending: 0, lag: 7, 'entries-read': 10 } : { pending: 0, lag: 0 });

    expect(await collectStreamStats(onReplica, stream, 'g', `${stream}:dlq`)).toMatchObject({ lag: 0 });
    expect(await onReplica.nrsRepairEntriesRead(stream, 'g')).toBe(stale ? 7 : 0);
    await onReplica.xadd(stream, '*', 'n', 'after');
    expect(await rawGroup(onReplica, stream)).toMatchObject({ lag: 1 });
    expect(await collectStreamStats(onReplica, stream, 'g', `${stream}:dlq`)).toMatchObject({ lag: 1 });
  });
});
