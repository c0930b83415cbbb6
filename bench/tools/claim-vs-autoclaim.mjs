// XREADGROUP … CLAIM against the transport's XAUTOCLAIM reclaim path, on the same server, same run:
// Redis CPU per reclaimed entry and reclaim latency. Needs a Redis 8.4+ (CLAIM) at REDIS_URL and
// the built library (node scripts/build-lib.mjs).
//   REDIS_URL=redis://127.0.0.1:6379 node bench/tools/claim-vs-autoclaim.mjs [--entries=50000] [--count=100] [--rounds=3]
//
// CPU: a dead consumer leaves `entries` entries pending, idle past min-idle; the path under test
// takes every one of them over, `count` at a time, up to where a handler could start:
//   xautoclaim  XAUTOCLAIM … JUSTID, the claimed-entries script (XPENDING + XRANGE per id: count and
//               fields), then the delivery count raised when the handler starts (claim-if-owned script),
//               one call per entry as the consumer makes it
//   claim       XREADGROUP … CLAIM <min-idle> COUNT n (the read returns fields and counts the delivery)
//   claim+check the read, then the start-time check the consumer makes for each claimed entry
//   script      the CLAIM read as the consumer sends it: inside the script that raises the claim
//               epoch when it took anything over (recovery/claim-read.ts)
//   script+check the scripted read and the start-time check: the consumer's whole path
// Redis' own CPU is INFO cpu (used_cpu_user + used_cpu_sys) before and after, divided by entries.
// Latency: one entry becomes claimable `minIdle` ms after its delivery; the XAUTOCLAIM path sees it
// at its next round (reclaimIntervalMs, default 5000: a uniform wait, mean half of it), while a
// blocked CLAIM read returns when it becomes claimable: measured as the read's return time minus
// the moment the entry became claimable, over `rounds` entries.
import { Redis } from 'ioredis';
import { withStreamScripts } from '../../libs/nest-redis-streams/dist/redis/scripts.js';
import { readWithClaim } from '../../libs/nest-redis-streams/dist/recovery/claim-read.js';

const arg = (name, fallback) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const ENTRIES = arg('entries', 50_000);
const COUNT = arg('count', 100);
const ROUNDS = arg('rounds', 3);
// Long enough that the CLAIM loop ends before its own claimed entries idle past it (they would be
// delivered to it again: the "own in-flight entries" pitfall).
const MIN_IDLE = 3_000;

const redis = withStreamScripts(new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'));
const cpu = async () => {
  const info = await redis.info('cpu');
  const get = (k) => Number(new RegExp(`^${k}:(.+)$`, 'm').exec(info)[1]);
  return get('used_cpu_user') + get('used_cpu_sys');
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function deadConsumerBacklog(stream) {
  await redis.del(stream);
  await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
  for (let i = 0; i < ENTRIES; i += 1000) {
    const p = redis.pipeline();
    for (let j = i; j < Math.min(ENTRIES, i + 1000); j++)
      p.xadd(stream, '*', 'v', 'nrs/1', 'event_id', `e-${j}`, 'data', `{"i":${j}}`);
    await p.exec();
  }
  await redis.xreadgroup('GROUP', 'g', 'dead', 'COUNT', ENTRIES, 'STREAMS', stream, '>');
  await sleep(MIN_IDLE + 50);
}

async function viaXautoclaim(stream) {
  let cursor = '0-0';
  let taken = 0;
  do {
    const [next, ids] = await redis.xautoclaim(stream, 'g', 'c2', MIN_IDLE, cursor, 'COUNT', COUNT, 'JUSTID');
    cursor = next;
    if (ids.length === 0) continue;
    const rows = await redis.nrsClaimedEntries(stream, 'g', ...ids);
    // The consumer raises each entry's count as its handler starts, one call per entry.
    await Promise.all(rows.map(([id, deliveries]) => redis.nrsClaimIfOwned(stream, 'g', 'c2', 0, Number(deliveries) + 1, id)));
    taken += rows.length;
  } while (cursor !== '0-0');
  return taken;
}

// Entries this loop took already come back once idle past min-idle (a slow run on a loaded machine):
// they are not counted again, as the consumer does not run them again.
async function viaClaim(stream) {
  const seen = new Set();
  let taken = 0;
  for (;;) {
    const reply = await redis.call('XREADGROUP', 'GROUP', 'g', 'c2', 'COUNT', COUNT, 'CLAIM', MIN_IDLE, 'STREAMS', stream, '>');
    const entries = reply?.[0]?.[1] ?? [];
    const claimed = entries.filter((e) => Number(e[3]) > 0 && !seen.has(e[0]));
    for (const e of claimed) seen.add(e[0]);
    taken += claimed.length;
    if (claimed.length === 0) return taken;
  }
}

// As the consumer runs it: the read, then each claimed entry checked to be still ours when it starts
// (claim-if-owned, setting the count the read already set), one call per entry.
async function viaClaimChecked(stream) {
  const seen = new Set();
  let taken = 0;
  for (;;) {
    const reply = await redis.call('XREADGROUP', 'GROUP', 'g', 'c2', 'COUNT', COUNT, 'CLAIM', MIN_IDLE, 'STREAMS', stream, '>');
    const claimed = (reply?.[0]?.[1] ?? []).filter((e) => Number(e[3]) > 0 && !seen.has(e[0]));
    for (const e of claimed) seen.add(e[0]);
    await Promise.all(claimed.map((e) => redis.nrsClaimIfOwned(stream, 'g', 'c2', 0, Number(e[3]) + 1, e[0])));
    taken += claimed.length;
    if (claimed.length === 0) return taken;
  }
}

// The consumer's own CLAIM read (a script around XREADGROUP … CLAIM) and, with `check`, the
// start-time check of each claimed entry.
function viaScript(check) {
  return async (stream) => {
    const seen = new Set();
    let taken = 0;
    for (;;) {
      const read = await readWithClaim(redis, { stream, group: 'g', consumer: 'c2' }, COUNT, MIN_IDLE, () => false);
      const claimed = read.claimed.filter((c) => !seen.has(c.id));
      for (const c of claimed) seen.add(c.id);
      if (check) await Promise.all(claimed.map((c) => redis.nrsClaimIfOwned(stream, 'g', 'c2', 0, c.deliveries, c.id)));
      taken += claimed.length;
      if (claimed.length === 0) return taken;
    }
  };
}

async function cpuPerEntry(name, path) {
  const stream = `bench:claim:${name}`;
  await deadConsumerBacklog(stream);
  const before = await cpu();
  const started = performance.now();
  const taken = await path(stream);
  const wallMs = performance.now() - started;
  const usedS = (await cpu()) - before;
  await redis.del(stream);
  if (taken !== ENTRIES) throw new Error(`${name} took ${taken} of ${ENTRIES} entries`);
  return { name, usPerEntry: (usedS * 1e6) / taken, wallMs };
}

async function claimLatency() {
  const stream = 'bench:claim:latency';
  await redis.del(stream);
  await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
  const reader = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  const waits = [];
  for (let i = 0; i < ROUNDS; i++) {
    await redis.xadd(stream, '*', 'n', String(i));
    await redis.xreadgroup('GROUP', 'g', 'dead', 'COUNT', 1, 'STREAMS', stream, '>');
    const claimableAt = Date.now() + 1_000;
    const reply = await reader.call(
      'XREADGROUP',
      'GROUP',
      'g',
      'c2',
      'COUNT',
      1,
      'BLOCK',
      30_000,
      'CLAIM',
      1_000,
      'STREAMS',
      stream,
      '>',
    );
    waits.push(Date.now() - claimableAt);
    await redis.xack(stream, 'g', reply[0][1][0][0]);
  }
  reader.disconnect();
  await redis.del(stream);
  return waits;
}

const version = /^redis_version:(.+)$/m.exec(await redis.info('server'))[1].trim();
const rows = [];
for (const [name, path] of [
  ['xautoclaim', viaXautoclaim],
  ['claim', viaClaim],
  ['claim+check', viaClaimChecked],
  ['script', viaScript(false)],
  ['script+check', viaScript(true)],
  ['xautoclaim', viaXautoclaim],
  ['claim', viaClaim],
  ['claim+check', viaClaimChecked],
  ['script', viaScript(false)],
  ['script+check', viaScript(true)],
]) {
  rows.push(await cpuPerEntry(name, path));
}
const waits = await claimLatency();
console.log(`Redis ${version}, ${ENTRIES} idle entries of a dead consumer, COUNT ${COUNT}`);
console.log('path        Redis CPU us/entry  wall ms');
for (const r of rows)
  console.log(`${r.name.padEnd(12)} ${r.usPerEntry.toFixed(2).padStart(17)}  ${r.wallMs.toFixed(0).padStart(7)}`);
console.log(`claim: a blocked read returned ${waits.map((w) => `${w} ms`).join(', ')} after the entry became claimable;`);
console.log('xautoclaim: the next reclaim round, reclaimIntervalMs (default 5000) at most, 2500 ms on average.');
console.log('(the transport sends its scripted CLAIM read at most a second apart: bench/tools/claim-rerun.ts measures it)');
redis.disconnect();
