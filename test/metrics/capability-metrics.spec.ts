import { Controller } from '@nestjs/common';
import { EventPattern } from '@nestjs/microservices';
import { RedisStreamsMetrics } from 'nest-redis-streams';
import { Registry } from 'prom-client';
import { probeCapabilities } from '../../libs/nest-redis-streams/src/redis/capabilities.js';
import { redisUrl, startMicroservice, testContext, unique } from '../support/helpers.js';

// Issue 25: what listen() probed is in the metrics too, for dashboards and alerts: one gauge per
// stream capability (1 when every node has it) and one info series per node with its server,
// version and patch floor.
const { redis, closers } = testContext();

function handlers(stream: string) {
  @Controller()
  class Handlers {
    @EventPattern(stream)
    handle() {}
  }
  return Handlers;
}

async function series(registry: Registry, name: string) {
  const metric = registry.getSingleMetric(name);
  return metric ? (await metric.get()).values : [];
}

describe('capability metrics', () => {
  it('report each stream capability and each node with its version and patch floor, as probed at listen()', async () => {
    const stream = unique('metrics-caps');
    const { app, server } = await startMicroservice([handlers(stream)], { connection: redisUrl() });
    closers.push(() => app.close());
    const registry = new Registry();
    const metrics = new RedisStreamsMetrics().attach(server, { registry, sampleIntervalMs: 0 });
    closers.push(async () => metrics.close());
    await metrics.sampleNow();

    const probed = await probeCapabilities(redis, unique('metrics-probe'));
    const capability = await series(registry, 'redis_streams_stream_capability');
    const byName = Object.fromEntries(capability.map((v) => [String(v.labels.capability), v.value]));
    expect(byName).toEqual({
      claim: probed.all.claim ? 1 : 0,
      idmp: probed.all.idmp ? 1 : 0,
      ack_delete: probed.all.ackDelete ? 1 : 0,
      trim_conditions: probed.all.trimConditions ? 1 : 0,
      nack: probed.all.nack ? 1 : 0,
    });
    const nodes = await series(registry, 'redis_streams_redis_node_info');
    const node = probed.nodes[0];
    expect(nodes.map((v) => ({ ...v.labels, value: v.value }))).toEqual([
      expect.objectContaining({
        server: node.server,
        version: node.version,
        patch_floor: node.patchFloor.floor ?? 'ok',
        value: 1,
      }),
    ]);
  }, 30_000);
});
