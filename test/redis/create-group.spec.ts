import { Redis } from 'ioredis';
import { claimEpochKey } from '../../libs/nest-redis-streams/src/keys/index.js';
import { withStreamScripts } from '../../libs/nest-redis-streams/src/redis/scripts.js';
import { pairsToObject } from '../../libs/nest-redis-streams/src/redis/replies.js';
import { probeRedisFeatures } from '../../libs/nest-redis-streams/src/redis/redis-features.js';
import { UnsupportedRedisError } from '../../libs/nest-redis-streams/src/redis/errors/unsupported-redis.error.js';
import { Controller } from '@nestjs/common';
import { EventPattern } from '@nestjs/microservices';
import { redisClient, startMicroservice, unique } from '../support/helpers.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startRedis } = require('../../scripts/lib/redis-process.cjs');

describe('group creation and the Redis feature probe (real redis-server)', () => {
  const redis = withStreamScripts(redisClient());
  afterAll(() => redis.quit());

  async function groupInfo(stream: string, group: string) {
    const groups = ((await redis.xinfo('GROUPS', stream)) as unknown[][]).map(pairsToObject);
    return groups.find((g) => g['name'] === group)!;
  }
  async function addEntries(stream: string, n: number) {
    for (let i = 0; i < n; i++) await redis.xadd(stream, '*', 'n', String(i));
  }

  it('sets entries-read from the stream on Redis 7: exact lag from the start for "$" and "0"', async () => {
    const stream = unique('cg');
    await addEntries(stream, 5);
    expect(await redis.nrsCreateGroup(stream, claimEpochKey(stream, 'g'), 'from-now', '$')).toBe('OK');
    expect(await redis.nrsCreateGroup(stream, claimEpochKey(stream, 'g'), 'from-start', '0')).toBe('OK');
    expect(await groupInfo(stream, 'from-now')).toMatchObject({ 'entries-read': 5, lag: 0 });
    expect(await groupInfo(stream, 'from-start')).toMatchObject({ 'entries-read': 0, lag: 5 });
    // MKSTREAM: a group on a stream that does not exist yet.
    const fresh = unique('cg-fresh');
    expect(await redis.nrsCreateGroup(fresh, claimEpochKey(fresh, 'g'), 'g', '$')).toBe('OK');
    expect(await groupInfo(fresh, 'g')).toMatchObject({ 'entries-read': 0, lag: 0 });
  });

  it('leaves ENTRIESREAD out when told the server lacks it, and creates the group all the same', async () => {
    const stream = unique('cg-plain');
    await addEntries(stream, 3);
    expect(await redis.nrsCreateGroup(stream, claimEpochKey(stream, 'g'), 'g', '$', '0')).toBe('OK');
    expect(await groupInfo(stream, 'g')).toMatchObject({
      'entries-read': null,
      'last-delivered-id': (await redis.xrevrange(stream, '+', '-', 'COUNT', 1))[0][0],
    });
  });

  it('returns BUSYGROUP and WRONGTYPE as errors, without falling back', async () => {
    const stream = unique('cg-busy');
    await redis.nrsCreateGroup(stream, claimEpochKey(stream, 'g'), 'g', '$');
    await expect(redis.nrsCreateGroup(stream, claimEpochKey(stream, 'g'), 'g', '$')).rejects.toThrow(/^BUSYGROUP/);
    const notStream = unique('cg-string');
    await redis.set(notStream, 'x');
    await expect(redis.nrsCreateGroup(notStream, claimEpochKey(notStream, 'g'), 'g', '$')).rejects.toThrow(/^WRONGTYPE/);
  });

  it('probes this Redis 7 as supported, with the 7.0 stream counters', async () => {
    const features = await probeRedisFeatures(redis);
    expect(features.streamCounters).toBe(true);
    expect(features.version).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('fails with a message naming XAUTOCLAIM and the server version when XAUTOCLAIM is renamed away', async () => {
    const server = await startRedis({ appendonly: false, extraArgs: ['--rename-command', 'XAUTOCLAIM', ''] });
    const client = new Redis(server.url, { maxRetriesPerRequest: 1 });
    try {
      await expect(client.call('XAUTOCLAIM', 's', 'g', 'c', '0', '0')).rejects.toThrow(/unknown command/);
      const failure = await probeRedisFeatures(client).catch((err: unknown) => err);
      expect(failure).toBeInstanceOf(UnsupportedRedisError);
      const { version } = await probeRedisFeatures(redis);
      expect((failure as Error).message).toBe(
        `This Redis server (${version}) does not offer XAUTOCLAIM, which the reclaimer needs to take over the entries of ` +
          'dead consumers: it was renamed or disabled (rename-command), or a proxy does not pass it. Allow XAUTOCLAIM ' +
          '(Redis 6.2 or newer).',
      );
    } finally {
      client.disconnect();
      await server.stop();
    }
  }, 60_000); // a redis-server process

  it('makes listen() fail with that message, before any group is created', async () => {
    const server = await startRedis({ appendonly: false, extraArgs: ['--rename-command', 'XAUTOCLAIM', ''] });
    const stream = unique('probe-listen');
    @Controller()
    class Handler {
      @EventPattern(stream)
      handle() {}
    }
    try {
      const failure = await startMicroservice([Handler], { connection: server.url }).catch((err: unknown) => err);
      expect(failure).toBeInstanceOf(UnsupportedRedisError);
      expect((failure as Error).message).toMatch(/does not offer XAUTOCLAIM.*Allow XAUTOCLAIM \(Redis 6\.2 or newer\)\./);
      const probe = new Redis(server.url, { maxRetriesPerRequest: 1 });
      expect(await probe.exists(stream)).toBe(0);
      probe.disconnect();
    } finally {
      await server.stop();
    }
  }, 60_000); // a redis-server process
});
