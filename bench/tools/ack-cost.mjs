// Redis CPU per acked id of each way the transport can ack, against the plain XACK a hand-written
// loop sends, on the same server in the same run. Needs a Redis at REDIS_URL (one the machine
// does not otherwise use: its CPU counters are read) and the built library (node scripts/build-lib.mjs).
//   REDIS_URL=redis://127.0.0.1:6379 node bench/tools/ack-cost.mjs [--entries=100000] [--batch=400] [--rounds=2]
//
//   xack      XACK of `batch` ids, as the hand-written loop sends it
//   watched   what the transport sends under the claim epoch Redis holds: WATCH + HMGET of the
//             epoch, then MULTI / the same XACK / EXEC, on a connection of its own
//   fast      the ack script read under the claim epoch Redis holds: HMGET, then the same XACK
//             (the transport's cheap ack before WATCH; still the path of cluster connections)
//   checked   the ack script with no epoch (or a moved one): consumer-filtered XPENDING rows, then XACK
// Each variant acks `entries` entries one consumer has pending; Redis' own CPU is INFO cpu
// (used_cpu_user + used_cpu_sys) before and after, divided by entries. Reads and XADDs are outside
// the measured span.
import { Redis } from 'ioredis';
import { claimEpochKey } from '../../libs/nest-redis-streams/dist/keys/index.js';
import { withStreamScripts } from '../../libs/nest-redis-streams/dist/redis/scripts.js';
import { WATCHED_ACK_CONNECTION, WatchedAck } from '../../libs/nest-redis-streams/dist/redis/watched-ack.js';

const arg = (name, fallback) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const ENTRIES = arg('entries', 100_000);
const BATCH = arg('batch', 400);
const ROUNDS = arg('rounds', 2);
const EPOCH = '1000000000000001';

const URL_ = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const redis = withStreamScripts(new Redis(URL_));
const lane = new WatchedAck(new Redis(URL_, { ...WATCHED_ACK_CONNECTION, lazyConnect: true }));
await lane.redis.connect();
const cpuUs = async () => {
  const info = await redis.info('cpu');
  const field = (name) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)[1]);
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1e6;
};

/** A stream whose `ENTRIES` entries consumer "c" of group "g" holds pending; their ids in order. */
async function pendingIds(stream) {
  await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
  for (let i = 0; i < ENTRIES; i += 5_000) {
    const pipeline = redis.pipeline();
    for (let j = 0; j < Math.min(5_000, ENTRIES - i); j++) pipeline.xadd(stream, '*', 'data', '{}');
    await pipeline.exec();
  }
  const ids = [];
  for (;;) {
    const reply = await redis.xreadgroup('GROUP', 'g', 'c', 'COUNT', 5_000, 'STREAMS', stream, '>');
    if (!reply) return ids;
    for (const [id] of reply[0][1]) ids.push(id);
  }
}

const send = {
  xack: (stream, _key, ids) => redis.xack(stream, 'g', ...ids),
  watched: async (stream, key, ids) => {
    if ((await lane.ack(stream, 'g', key, EPOCH, ids)) === null) throw new Error('The watched ack did not take.');
  },
  fast: (stream, key, ids) => redis.nrsAckUnderEpoch(stream, key, 'g', 'c', ids[0], ids[ids.length - 1], EPOCH, ...ids),
  checked: (stream, key, ids) => redis.nrsAckUnderEpoch(stream, key, 'g', 'c', ids[0], ids[ids.length - 1], '', ...ids),
};

const results = Object.fromEntries(Object.keys(send).map((variant) => [variant, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const variant of Object.keys(send)) {
    const stream = `bench:ack-cost:${variant}:${process.pid}:${round}`;
    const key = claimEpochKey(stream, 'g');
    const ids = await pendingIds(stream);
    await redis.hset(key, 'n', EPOCH);
    const before = await cpuUs();
    for (let i = 0; i < ids.length; i += BATCH) await send[variant](stream, key, ids.slice(i, i + BATCH));
    results[variant].push(((await cpuUs()) - before) / ids.length);
    const [pending] = await redis.xpending(stream, 'g');
    if (Number(pending) !== 0) throw new Error(`${variant} left ${pending} entries pending.`);
    await redis.del(stream, key);
  }
}
const least = (values) => Math.min(...values);
console.log(`Redis CPU per acked id, ${ENTRIES} entries in batches of ${BATCH}, least of ${ROUNDS} rounds:`);
for (const variant of Object.keys(send)) {
  const us = least(results[variant]);
  console.log(`  ${variant.padEnd(8)} ${us.toFixed(2)} µs  (${(us / least(results.xack)).toFixed(2)}× xack)`);
}
redis.disconnect();
lane.redis.disconnect();
