// Where Redis spends its time per entry: the hand-written loop, this transport as shipped and tuned
// drain the same pre-filled stream, each with a fresh group, and INFO commandstats (reset before
// each run) gives calls and microseconds per entry for every command, INFO cpu the total.
// Needs the built benchmark (`npm run bench -- --only=none` builds it, or `node bench/run.mjs
// --only=none`) and a Redis at REDIS_URL the machine does not otherwise use (its counters are reset).
//   REDIS_URL=redis://127.0.0.1:6379 node bench/tools/redis-work-per-entry.mjs [--entries=100000]
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';

const arg = (name, fallback) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const ENTRIES = arg('entries', 100_000);
const URL_ = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const STREAM = `bench:redis-work:${process.pid}`;
const child = (name) => fileURLToPath(new URL(`../../dist/bench/children/${name}.js`, import.meta.url));

const VARIANTS = [
  { what: 'hand-written loop (COUNT 500)', child: 'raw-consumer', env: { READ_COUNT: 500 } },
  { what: 'transport, no options', child: 'transport-consumer', env: {} },
  { what: 'transport, concurrency 64 / prefetch 500', child: 'transport-consumer', env: { CONCURRENCY: 64, PREFETCH: 500 } },
];
// On servers with XREADGROUP … CLAIM (8.4+) the transport reads that way by default; these rows
// show what turning it off (cheap acks) saves. Elsewhere they would repeat the rows above.
const claimVariants = [
  { what: 'transport, no options, claimReads: false', child: 'transport-consumer', env: { CLAIM_READS: 'false' } },
  {
    what: 'transport, concurrency 64 / prefetch 500, claimReads: false',
    child: 'transport-consumer',
    env: { CONCURRENCY: 64, PREFETCH: 500, CLAIM_READS: 'false' },
  },
];

const redis = new Redis(URL_);

async function prefill() {
  const payload = JSON.stringify({ orderId: 1, amount: 42, note: 'bench' });
  for (let i = 0; i < ENTRIES; i += 5_000) {
    const pipeline = redis.pipeline();
    for (let j = 0; j < Math.min(5_000, ENTRIES - i); j++)
      pipeline.xadd(STREAM, '*', 'v', 'nrs/1', 'event_id', `e-${i + j}`, 'data', payload, 'published_at', String(Date.now()));
    await pipeline.exec();
  }
}

/** Runs one child until it reports every entry acked; resolves when it has exited. */
function drain(variant, group) {
  return new Promise((resolve, reject) => {
    const env = { ...process.env, REDIS_URL: URL_, STREAM, GROUP: group, EXPECT: String(ENTRIES), ...variant.env };
    const proc = fork(child(variant.child), [], { env: Object.fromEntries(Object.entries(env).map(([k, v]) => [k, String(v)])) });
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`${variant.what}: not done within 120 s`));
    }, 120_000);
    proc.on('message', (message) => {
      if (message.type === 'done') proc.send({ type: 'stop' });
    });
    proc.on('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

const cpuUs = async () => {
  const info = await redis.info('cpu');
  const field = (name) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)[1]);
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1e6;
};

async function commandStats() {
  const info = await redis.info('commandstats');
  const rows = [];
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm))
    rows.push({ command: match[1], calls: Number(match[2]), usec: Number(match[3]) });
  return rows.filter((r) => r.command !== 'info' && r.command !== 'config');
}

const claimCapable = await redis
  .call('COMMAND', 'DOCS', 'XREADGROUP')
  .then((docs) => JSON.stringify(docs).includes('"min-idle-time"'))
  .catch(() => false);
if (claimCapable) VARIANTS.push(...claimVariants);

await prefill();
const results = [];
for (const [i, variant] of VARIANTS.entries()) {
  const group = `g${i}`;
  await redis.xgroup('CREATE', STREAM, group, '0');
  await redis.config('RESETSTAT');
  const before = await cpuUs();
  await drain(variant, group);
  const cpu = (await cpuUs()) - before;
  results.push({ variant, cpu, stats: await commandStats() });
}
await redis.del(STREAM);
await redis.quit();

const base = results[0].cpu;
console.log(`Redis work per entry, ${ENTRIES.toLocaleString('en-US')} entries each (commandstats reset per run):`);
for (const { variant, cpu, stats } of results) {
  console.log(`\n${variant.what}: redis CPU ${(cpu / ENTRIES).toFixed(2)} µs/entry (${(cpu / base).toFixed(2)}× the loop)`);
  for (const s of stats.sort((a, b) => b.usec - a.usec))
    console.log(
      `  ${s.command.padEnd(24)} ${(s.calls / ENTRIES).toFixed(4).padStart(8)} calls/entry  ${(s.usec / ENTRIES).toFixed(3).padStart(7)} µs/entry`,
    );
}
