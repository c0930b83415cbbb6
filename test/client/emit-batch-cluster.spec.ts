import { Cluster } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { RedisStreamsClient, StreamRecord, partitionOf, partitionStream } from 'nest-redis-streams';
import { unique } from '../support/helpers.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startCluster } = require('../../scripts/lib/redis-cluster.cjs');

const PARTITIONS = 6;

/** emitBatch on a Redis Cluster of 3 masters (no replicas: nothing here fails over). */
describe('RedisStreamsClient emitBatch on a Redis Cluster', () => {
  let cluster: { startupNodes: Array<{ host: string; port: number }>; stop(): Promise<void> };
  let redis: Cluster;
  let client: RedisStreamsClient;

  beforeAll(async () => {
    cluster = await startCluster({ masters: 3, replicas: 0, appendfsync: 'no' });
    redis = new Cluster(cluster.startupNodes);
    if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
  }, 60_000);
  afterAll(async () => {
    await client?.close();
    redis?.disconnect();
    await cluster?.stop();
  });

  it('stores each entry in its key partition, one pipeline per slot, ids in the order given', async () => {
    const stream = unique('cl-batch');
    client = new RedisStreamsClient({ connection: { cluster: cluster.startupNodes }, partitions: { [stream]: PARTITIONS } });
    await client.connect();
    const pipeline = jest.spyOn(client.unwrap<Cluster>(), 'pipeline');
    const keys = Array.from({ length: 60 }, (_, i) => `customer-${i % 20}`);
    const records = keys.map((key, i) => new StreamRecord({ i }, { partitionKey: key, eventId: `e-${i}` }));

    const ids = await lastValueFrom(client.emitBatch(stream, records));

    expect(ids).toHaveLength(60);
    const partitions = Array.from({ length: PARTITIONS }, (_, p) => partitionStream(stream, p));
    const used = new Set(keys.map((key) => partitionOf(key, PARTITIONS)));
    // Every partition key has its own hash tag, hence its own slot: one pipeline per partition used.
    expect(pipeline).toHaveBeenCalledTimes(used.size);
    for (const [p, key] of partitions.entries()) {
      const stored = (await redis.xrange(key, '-', '+')) as Array<[string, string[]]>;
      const expected = keys.flatMap((k, i) => (partitionOf(k, PARTITIONS) === p ? [i] : []));
      expect(stored.map(([id, fields]) => [id, fields[fields.indexOf('event_id') + 1]])).toEqual(
        expected.map((i) => [ids[i], `e-${i}`]),
      );
    }
  });
});
