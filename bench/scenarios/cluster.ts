// The cluster row (issue 8): one logical stream split into partitions, drained by the same
// transport consumer from one redis-server and from a local 3-master Redis Cluster.
import { createRequire } from 'node:module';
import { Cluster, type Redis } from 'ioredis';
import { JsonCodec, encodeEnvelope, partitionStream } from 'nest-redis-streams';
import type { DoneMessage } from '../children/probe.js';
import { BenchChild } from '../support/bench-child.js';
import { orderPlaced } from '../support/prefill.js';
import { fmtCount, fmtRate, fmtRatio, rate } from '../support/stats.js';
import type { ResultRow } from '../support/table.js';
import { CLUSTER, PREFILL_BATCH, THROUGHPUT_SETTINGS } from '../settings.js';
import type { BenchContext } from './context.js';

const STREAM = 'bench:partitioned';

interface LocalCluster {
  startupNodes: Array<{ host: string; port: number }>;
  stop(): Promise<void>;
}

const require = createRequire(import.meta.url);
const { startCluster } = require('../../../scripts/lib/redis-cluster.cjs') as {
  startCluster(options: { masters: number; replicas: number; appendfsync: string }): Promise<LocalCluster>;
};

/** Fills every partition round-robin; one pipeline per partition (a cluster pipeline is per slot). */
async function prefillPartitions(redis: Redis | Cluster, count: number): Promise<void> {
  const codec = new JsonCodec();
  for (let from = 0; from < count; from += PREFILL_BATCH) {
    const pipelines = Array.from({ length: CLUSTER.partitions }, () => redis.pipeline());
    for (let i = from; i < Math.min(count, from + PREFILL_BATCH); i++) {
      pipelines[i % CLUSTER.partitions].xadd(
        partitionStream(STREAM, i % CLUSTER.partitions),
        '*',
        ...encodeEnvelope({ data: orderPlaced(i) }, codec),
      );
    }
    await Promise.all(pipelines.map((p) => p.exec()));
  }
}

async function drainPartitions(env: Record<string, string | number>): Promise<number> {
  const consumer = await BenchChild.start('transport-consumer', {
    STREAM,
    GROUP: 'partitioned',
    EXPECT: CLUSTER.entries,
    PARTITIONS: CLUSTER.partitions,
    CONCURRENCY: THROUGHPUT_SETTINGS.concurrency,
    PREFETCH: THROUGHPUT_SETTINGS.prefetchCount,
    ...env,
  });
  try {
    const done = await consumer.next<DoneMessage>('done', 120_000);
    return rate(done.count, done.elapsedMs);
  } finally {
    await consumer.stop();
  }
}

export async function clusterRows(ctx: BenchContext): Promise<ResultRow[]> {
  await prefillPartitions(ctx.redis, CLUSTER.entries);
  const single = await drainPartitions({ REDIS_URL: ctx.url });
  ctx.log(`partitioned drain, one redis-server: ${fmtRate(single)}`);

  const cluster = await startCluster({ masters: CLUSTER.masters, replicas: 0, appendfsync: 'everysec' });
  const redis = new Cluster(cluster.startupNodes);
  let clustered: number;
  try {
    await prefillPartitions(redis, CLUSTER.entries);
    clustered = await drainPartitions({ CLUSTER_NODES: JSON.stringify(cluster.startupNodes) });
    ctx.log(`partitioned drain, ${CLUSTER.masters}-master cluster: ${fmtRate(clustered)}`);
  } finally {
    redis.disconnect();
    await cluster.stop();
  }
  const setting = `${fmtCount(CLUSTER.entries)} entries in ${CLUSTER.partitions} partitions, one consumer process, concurrency ${THROUGHPUT_SETTINGS.concurrency}`;
  return [
    {
      row: '7',
      what: 'partitioned drain, one redis-server',
      setting,
      result: fmtRate(single),
      ratio: fmtRatio(1),
      target: 'baseline',
    },
    {
      row: '7',
      what: `partitioned drain, Redis Cluster (${CLUSTER.masters} masters)`,
      setting,
      result: fmtRate(clustered),
      ratio: fmtRatio(clustered / single),
      target: 'info',
    },
  ];
}
