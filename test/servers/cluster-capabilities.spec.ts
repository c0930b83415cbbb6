import { Cluster } from 'ioredis';
import { partitionStream } from 'nest-redis-streams';
import { probeCapabilities } from '../../libs/nest-redis-streams/src/redis/capabilities.js';
import { runCli } from '../cli/run-cli.js';
import { unique } from '../support/helpers.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startCluster } = require('../../scripts/lib/redis-cluster.cjs');

jest.setTimeout(90_000);

/** Capabilities and doctor on a Redis Cluster of 3 masters: per node, and the hash-tag layout. */
describe('capabilities and doctor on a cluster', () => {
  let cluster: { startupNodes: Array<{ host: string; port: number }>; stop(): Promise<void> };
  let redis: Cluster;
  beforeAll(async () => {
    cluster = await startCluster({ masters: 3, replicas: 0 });
    redis = new Cluster(cluster.startupNodes);
    if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
  }, 90_000);
  afterAll(async () => {
    redis?.disconnect();
    await cluster?.stop();
  });

  it('probes every master with a key on its own slots', async () => {
    const caps = await probeCapabilities(redis);
    expect(caps.nodes.map((n) => n.node).sort()).toEqual(cluster.startupNodes.map((n) => `${n.host}:${n.port}`).sort());
    for (const node of caps.nodes) expect(Object.values(node.detectedBy)).toEqual(['probe', 'probe', 'probe', 'probe', 'probe']);
  });

  it('names a dead-letter stream off its stream slot, and partitions pinned to one slot', async () => {
    const stream = unique('dr-cl');
    await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    await redis.xadd(`${stream}:dlq`, '*', 'dlq:reason', 'x');
    const pinned = `{${unique('pin')}}orders`;
    for (let p = 0; p < 3; p++) await redis.xgroup('CREATE', partitionStream(pinned, p), 'g', '0', 'MKSTREAM');
    const seeds = cluster.startupNodes.map((n) => `redis://${n.host}:${n.port}`).join(',');
    const run = await runCli(['doctor', '--cluster', '--url', seeds, '--json']);
    const report = JSON.parse(run.stdout) as { findings: Array<{ check: string; level: string; node: string; message: string }> };
    expect(run.code).toBe(1);
    // Every master is checked.
    expect(new Set(report.findings.filter((f) => f.check === 'eviction').map((f) => f.node)).size).toBe(3);
    const tags = report.findings.filter((f) => f.check === 'hash-tags');
    expect(tags).toContainEqual(
      expect.objectContaining({
        level: 'problem',
        message: expect.stringContaining(`Dead-letter stream "${stream}:dlq" hashes to slot`),
      }),
    );
    expect(tags).toContainEqual(
      expect.objectContaining({
        level: 'warning',
        message: expect.stringContaining(`All 3 partitions of "${pinned}" hash to slot`),
      }),
    );
    expect(run.stderr).toMatch(/^hash-tags: Dead-letter stream .*CROSSSLOT/m);
  });
});
