import { Redis } from 'ioredis';
import { claimEpochKey } from '../../libs/nest-redis-streams/src/keys/index.js';
import { type ScriptedRedis, withStreamScripts } from '../../libs/nest-redis-streams/src/redis/scripts.js';

// The scripts are sent by the library itself (EVALSHA, EVAL when the server lacks the script),
// not through ioredis' defineCommand. These tests pin what defineCommand gave for free: a server
// that never saw a script, one whose script cache was flushed, the connection's own key prefix,
// and Redis' errors passed on unchanged. A private redis-server, so that SCRIPT FLUSH and the
// command counters concern this file only.

const { startRedis } = require('../../scripts/lib/redis-process.cjs') as {
  startRedis(): Promise<{ url: string; stop(): Promise<void> }>;
};

/** The consumer's ack script (owner checked) for one id of group "g"; resolves with the ids not acked. */
async function ackOne(redis: ScriptedRedis, stream: string, id: string): Promise<string[]> {
  const [, , ...notAcked] = await redis.nrsAckUnderEpoch(stream, claimEpochKey(stream, 'g'), 'g', 'me', id, id, '', id);
  return notAcked;
}

/** Calls of EVAL and EVALSHA the server has executed so far (INFO commandstats). */
async function scriptCalls(redis: Redis): Promise<{ eval: number; evalsha: number }> {
  const info = await redis.info('commandstats');
  const calls = (name: string) => Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
  return { eval: calls('eval'), evalsha: calls('evalsha') };
}

describe('scripts sent as EVALSHA with an EVAL fallback', () => {
  let server: { url: string; stop(): Promise<void> };
  const connections: Redis[] = [];
  const connect = (options: { keyPrefix?: string } = {}) => {
    const redis = new Redis(server.url, { maxRetriesPerRequest: 1, ...options });
    connections.push(redis);
    return redis;
  };

  beforeAll(async () => {
    server = await startRedis();
  }, 60_000); // a redis-server process
  afterAll(async () => {
    await Promise.all(connections.map((c) => c.quit()));
    await server.stop();
  });

  /** A stream with one entry read (so pending) by consumer "me" of group "g". */
  async function pendingEntry(redis: Redis, stream: string): Promise<string> {
    await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    const id = (await redis.xadd(stream, '*', 'k', 'v'))!;
    await redis.xreadgroup('GROUP', 'g', 'me', 'STREAMS', stream, '>');
    return id;
  }

  it('loads a script the server has never seen, then sends only its SHA', async () => {
    const plain = connect();
    const scripted = withStreamScripts(connect());
    const first = await pendingEntry(plain, 'lean:first');
    const second = (await plain.xadd('lean:first', '*', 'k', 'v'))!;
    await plain.xreadgroup('GROUP', 'g', 'me', 'STREAMS', 'lean:first', '>');
    const before = await scriptCalls(plain);

    expect(await ackOne(scripted, 'lean:first', first)).toEqual([]);
    const afterFirst = await scriptCalls(plain);
    // EVALSHA answered NOSCRIPT (a failed call still counts in commandstats), EVAL ran it.
    expect(afterFirst.eval - before.eval).toBe(1);
    expect(afterFirst.evalsha - before.evalsha).toBe(1);

    expect(await ackOne(scripted, 'lean:first', second)).toEqual([]);
    const afterSecond = await scriptCalls(plain);
    expect(afterSecond.eval).toBe(afterFirst.eval);
    expect(afterSecond.evalsha - afterFirst.evalsha).toBe(1);
    expect(await plain.xpending('lean:first', 'g')).toEqual([0, null, null, null]);
  });

  it('runs again after SCRIPT FLUSH emptied the server’s script cache', async () => {
    const plain = connect();
    const scripted = withStreamScripts(connect());
    const id = await pendingEntry(plain, 'lean:flushed');
    await ackOne(scripted, 'lean:flushed', '0-1');
    await plain.script('FLUSH');

    expect(await ackOne(scripted, 'lean:flushed', id)).toEqual([]);
    expect(await plain.xpending('lean:flushed', 'g')).toEqual([0, null, null, null]);
  });

  it('prefixes its keys with the connection’s keyPrefix, as ioredis does for its own commands', async () => {
    const plain = connect();
    const prefixed = withStreamScripts(connect({ keyPrefix: 'tenant-a:' }));
    const id = await pendingEntry(plain, 'tenant-a:lean:prefixed');

    expect(await ackOne(prefixed, 'lean:prefixed', id)).toEqual([]);
    expect(await plain.xpending('tenant-a:lean:prefixed', 'g')).toEqual([0, null, null, null]);
    expect(await plain.exists('lean:prefixed')).toBe(0);
  });

  it('passes an error of the script itself on unchanged (no retry as EVAL)', async () => {
    const plain = connect();
    const scripted = withStreamScripts(connect());
    await plain.set('lean:not-a-stream', 'x');
    // Loaded (EVAL caches a script even when it then fails), so the call below goes as EVALSHA.
    await ackOne(scripted, 'lean:missing', '1-0').catch(() => undefined);
    const before = await scriptCalls(plain);

    await expect(ackOne(scripted, 'lean:not-a-stream', '1-0')).rejects.toThrow(/WRONGTYPE/);
    const after = await scriptCalls(plain);
    expect(after.eval).toBe(before.eval);
  });
});
