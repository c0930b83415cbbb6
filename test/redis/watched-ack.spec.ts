import { type Command, Redis } from 'ioredis';
import { claimEpochKey } from '../../libs/nest-redis-streams/src/keys/index.js';
import { type ScriptedRedis, withStreamScripts } from '../../libs/nest-redis-streams/src/redis/scripts.js';
import { WATCHED_ACK_CONNECTION, WatchedAck } from '../../libs/nest-redis-streams/src/redis/watched-ack.js';
import { redisUrl, unique, waitFor } from '../support/helpers.js';
import { startRedisGate } from '../support/redis-gate.js';

// CommonJS helper shared with the scripts: a private redis-server, for what must not touch the
// shared one (a paused server, ACL users).
const { startRedis } = require('../../scripts/lib/redis-process.cjs') as {
  startRedis(): Promise<{ url: string; stop(): Promise<void> }>;
};

// The plain XACK under WATCH of the claim epoch (redis/watched-ack.ts) against a real server. It
// must ack only while the epoch is the stamp the ids were read under, from before the XACK to its
// end, and never send its XACK unwatched.

const GROUP = 'g';
type Row = [id: string, consumer: string, idle: number, deliveries: number];

/**
 * Runs `before` when the lane sends its MULTI and holds the MULTI, and everything sent after it,
 * until `before` is done: what lands there lands between the lane's check and its transaction.
 * Returns the undo.
 */
function beforeTransaction(redis: Redis, before: () => Promise<unknown>): () => Promise<void> {
  const send = redis.sendCommand.bind(redis);
  let held: Promise<unknown> | null = null;
  redis.sendCommand = ((command: Command, stream?: unknown) => {
    if (command.name === 'multi') held ??= before();
    if (!held) return send(command, stream as never);
    void held.then(() => send(command, stream as never));
    return command.promise;
  }) as typeof redis.sendCommand;
  return async () => {
    redis.sendCommand = send;
  };
}

describe('acks under WATCH of the claim epoch', () => {
  const closers: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    while (closers.length > 0) await closers.pop()!();
  });

  async function connect(
    url = redisUrl(),
    laneUrl = url,
  ): Promise<{ redis: ScriptedRedis; lane: WatchedAck; refusals: Error[] }> {
    const redis = withStreamScripts(new Redis(url, { maxRetriesPerRequest: 1 }));
    // As the server opens it: ready before the first ack (without an offline queue, a command
    // sent before then fails at once, and the ack would go to the script).
    const laneConnection = new Redis(laneUrl, { ...WATCHED_ACK_CONNECTION, connectionName: 'nrs:acks:test', lazyConnect: true });
    closers.push(
      () => redis.quit(),
      async () => laneConnection.disconnect(),
    );
    await laneConnection.connect();
    const refusals: Error[] = [];
    return { redis, lane: new WatchedAck(laneConnection, (err) => refusals.push(err)), refusals };
  }

  /** A stream with `count` entries read (pending) by "me", and its epoch set to `epoch`. */
  async function pendingStream(redis: Redis, count: number, epoch = '1700000000000001') {
    const stream = unique('watched-ack');
    await redis.xgroup('CREATE', stream, GROUP, '0', 'MKSTREAM');
    const pipeline = redis.pipeline();
    for (let i = 0; i < count; i++) pipeline.xadd(stream, '*', 'i', String(i));
    const ids = (await pipeline.exec())!.map(([, id]) => id as string);
    await redis.xreadgroup('GROUP', GROUP, 'me', 'COUNT', count, 'STREAMS', stream, '>');
    const key = claimEpochKey(stream, GROUP);
    await redis.hset(key, 'n', epoch);
    closers.push(() => redis.del(stream, key));
    return { stream, key, ids, epoch };
  }

  async function owners(redis: Redis, stream: string): Promise<Record<string, string>> {
    const rows = (await redis.xpending(stream, GROUP, '-', '+', 100)) as Row[];
    return Object.fromEntries(rows.map(([id, consumer]) => [id, consumer]));
  }

  it('acks every id in one MULTI / XACK / EXEC while the epoch is the stamp', async () => {
    const { redis, lane } = await connect();
    const { stream, key, ids, epoch } = await pendingStream(redis, 30);
    await expect(lane.ack(stream, GROUP, key, epoch, ids)).resolves.toBe(30);
    expect(await owners(redis, stream)).toEqual({});
    // An id acked already is not counted again: XACK's own count.
    await expect(lane.ack(stream, GROUP, key, epoch, ids.slice(0, 3))).resolves.toBe(0);
  });

  it('acks nothing when a claim raised the epoch after the read, and leaves no WATCH behind', async () => {
    const { redis, lane } = await connect();
    const { stream, key, ids, epoch } = await pendingStream(redis, 3);
    await redis.nrsClaimCounted(stream, key, GROUP, 'other', ids[0]);
    await expect(lane.ack(stream, GROUP, key, epoch, ids)).resolves.toBeNull();
    expect(await owners(redis, stream)).toEqual({ [ids[0]]: 'other', [ids[1]]: 'me', [ids[2]]: 'me' });
    // Under the new epoch the next ack goes through: the refused one's WATCH was lifted (a
    // lingering one would abort this EXEC only if the key moved, so move it between the two).
    const now = (await redis.hget(key, 'n'))!;
    await expect(lane.ack(stream, GROUP, key, now, [ids[1]])).resolves.toBe(1);
  });

  it('acks nothing when a claim raises the epoch between its WATCH and its EXEC', async () => {
    const { redis, lane } = await connect();
    const { stream, key, ids, epoch } = await pendingStream(redis, 3);
    // The claim lands after the lane read the epoch (and found it unchanged), before its EXEC runs.
    closers.push(beforeTransaction(lane.redis, () => redis.nrsClaimCounted(stream, key, GROUP, 'other', ids[2])));
    await expect(lane.ack(stream, GROUP, key, epoch, ids)).resolves.toBeNull();
    expect(await owners(redis, stream)).toEqual({ [ids[0]]: 'me', [ids[1]]: 'me', [ids[2]]: 'other' });
  });

  it.each([
    ['the epoch hash was lost (restart without persistence, eviction, DEL)', (r: Redis, key: string) => r.del(key)],
    ['the group carries the CLAIM-read mark of version 0.2', (r: Redis, key: string) => r.hset(key, 'claim-reads', '1')],
  ])('acks nothing when %s', async (_, change) => {
    const { redis, lane } = await connect();
    const { stream, key, ids, epoch } = await pendingStream(redis, 2);
    await change(redis, key);
    await expect(lane.ack(stream, GROUP, key, epoch, ids)).resolves.toBeNull();
    expect(Object.keys(await owners(redis, stream))).toEqual(ids);
  });

  /** Asks for several acks in one turn, as busy consumers of one server do: they share a step. */
  function ackTogether(lane: WatchedAck, asks: Array<{ stream: string; key: string; epoch: string; ids: string[] }>) {
    return Promise.all(asks.map(({ stream, key, epoch, ids }) => lane.ack(stream, GROUP, key, epoch, ids)));
  }

  it('acks the batches of several streams asked together in one WATCH / MULTI / EXEC, each with its count', async () => {
    const { redis, lane } = await connect();
    const streams = [await pendingStream(redis, 4), await pendingStream(redis, 2), await pendingStream(redis, 3)];
    const sent: string[] = [];
    const send = lane.redis.sendCommand.bind(lane.redis);
    lane.redis.sendCommand = ((command: Command, stream?: unknown) => {
      sent.push(command.name);
      return send(command, stream as never);
    }) as typeof lane.redis.sendCommand;
    closers.push(async () => (lane.redis.sendCommand = send));
    // The first ack takes a step of its own; the two asked while it runs share the next.
    const first = lane.ack(streams[0].stream, GROUP, streams[0].key, streams[0].epoch, streams[0].ids);
    await waitFor(() => sent.includes('watch'), 'the first step to begin');
    await expect(ackTogether(lane, streams.slice(1))).resolves.toEqual([2, 3]);
    await expect(first).resolves.toBe(4);
    for (const { stream } of streams) expect(await owners(redis, stream)).toEqual({});
    expect(sent.filter((name) => name === 'exec')).toHaveLength(2);
    expect(sent.filter((name) => name === 'xack')).toHaveLength(3);
  });

  it('keeps a step to 4,000 ids: two batches of 3,000 asked together go in a step each', async () => {
    const own = await startRedis(); // its own: commandstats count every client's calls
    closers.push(() => own.stop());
    const { redis, lane } = await connect(own.url);
    const [a, b] = [await pendingStream(redis, 3_000), await pendingStream(redis, 3_000)];
    await redis.config('RESETSTAT');
    await expect(ackTogether(lane, [a, b])).resolves.toEqual([3_000, 3_000]);
    expect(await redis.info('commandstats')).toMatch(/cmdstat_exec:calls=2,/);
  });

  it("acks the others of a step when one stream's epoch moved, and leaves that one to the script", async () => {
    const { redis, lane } = await connect();
    const [a, b] = [await pendingStream(redis, 2), await pendingStream(redis, 2)];
    await redis.nrsClaimCounted(a.stream, a.key, GROUP, 'other', a.ids[0]);
    await expect(ackTogether(lane, [a, b])).resolves.toEqual([null, 2]);
    expect(await owners(redis, a.stream)).toEqual({ [a.ids[0]]: 'other', [a.ids[1]]: 'me' });
    expect(await owners(redis, b.stream)).toEqual({});
  });

  it('acks nothing of a step when a claim on any of its streams lands between the WATCH and the EXEC', async () => {
    const { redis, lane } = await connect();
    const [a, b] = [await pendingStream(redis, 2), await pendingStream(redis, 2)];
    closers.push(beforeTransaction(lane.redis, () => redis.nrsClaimCounted(b.stream, b.key, GROUP, 'other', b.ids[1])));
    await expect(ackTogether(lane, [a, b])).resolves.toEqual([null, null]);
    expect(Object.keys(await owners(redis, a.stream))).toEqual(a.ids);
    expect(await owners(redis, b.stream)).toEqual({ [b.ids[0]]: 'me', [b.ids[1]]: 'other' });
  });

  it('gives up, and never sends its transaction again, when the connection dies before Redis got it', async () => {
    // The lane talks to Redis through a relay that keeps what it sends and then cuts it off: the
    // MULTI / XACK / EXEC never reach Redis, as when a connection dies mid-write.
    const gate = await startRedisGate(Number(new URL(redisUrl()).port));
    closers.push(() => gate.close());
    const { redis, lane } = await connect(redisUrl(), gate.url);
    const { stream, key, ids, epoch } = await pendingStream(redis, 3);
    const restore = beforeTransaction(lane.redis, async () => gate.hold());
    const ack = lane.ack(stream, GROUP, key, epoch, ids);
    await waitFor(() => /exec/i.test(gate.kept()), 'the transaction to be sent');
    await restore();
    gate.cut();
    // Settled by the close, not left hanging: ioredis never answers what it does not send again.
    await expect(ack).resolves.toBeNull();
    await waitFor(() => lane.redis.status === 'ready', 'the connection to come back');
    // Sent again on the new connection, the transaction would have no WATCH and ack the entries;
    // anything sent again runs before this ack, on the same connection.
    const { stream: other, key: otherKey, ids: otherIds } = await pendingStream(redis, 1);
    await expect(lane.ack(other, GROUP, otherKey, epoch, otherIds)).resolves.toBe(1);
    expect(Object.keys(await owners(redis, stream))).toEqual(ids);
  });

  it('reports a user without WATCH once and leaves every later ack to the script', async () => {
    const own = await startRedis();
    closers.push(() => own.stop());
    const admin = new Redis(own.url);
    closers.push(() => admin.quit());
    await admin.call('ACL', 'SETUSER', 'nowatch', 'on', '>pw', '~*', '&*', '+@all', '-watch');
    const { redis, lane, refusals } = await connect(own.url.replace('redis://', 'redis://nowatch:pw@'));
    const { stream, key, ids, epoch } = await pendingStream(redis, 2);
    await expect(lane.ack(stream, GROUP, key, epoch, [ids[0]])).resolves.toBeNull();
    await expect(lane.ack(stream, GROUP, key, epoch, [ids[1]])).resolves.toBeNull();
    expect(refusals.map((err) => err.message)).toEqual([expect.stringMatching(/^NOPERM .*watch/i)]);
    expect(Object.keys(await owners(redis, stream))).toEqual(ids);
    // The second ack sent nothing: Redis saw one WATCH, refused.
    expect(await admin.info('commandstats')).toMatch(/cmdstat_watch:calls=0,.*rejected_calls=1\b/);
  });
});
