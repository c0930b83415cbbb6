// A producer process of the chaos suite (test/chaos). Writes COUNT events (or KIND=hostile
// entries) to STREAM at RATE events/s with raw XADD in this library's envelope, and counts an
// event as produced (in the ledger) only once XADD returned its entry id. A failed XADD is retried
// with the same event id until it succeeds, so a lost reply can add a duplicate, never a loss.
import { Redis } from 'ioredis';
import { JsonCodec, encodeEnvelope } from 'nest-redis-streams';
import { type ChaosFlags, type Expectation, entryKey, ledgerKeys } from './chaos-ledger.js';
import { hostileEntries } from './chaos-hostile.js';

const env = process.env;
const num = (name: string, fallback: number) => (env[name] === undefined ? fallback : Number(env[name]));
const run = env.RUN!;
const stream = env.STREAM!;
const keys = ledgerKeys(run);
const first = num('FIRST', 0);
const total = num('COUNT', 1000);
const rate = num('RATE', 0);
const batchSize = num('BATCH', 50);
const every = (name: string, i: number) => num(name, 0) > 0 && i % num(name, 0) === num(name, 0) - 1;
const maxLen = env.MAXLEN ? ['MAXLEN', env.MAXLEN] : [];
const codec = new JsonCodec();
const BATCH_TIMEOUT_MS = 5_000;

// ioredis may resend a command whose reply a dropped connection lost (a duplicate entry with the
// same event id, which consumers dedupe); errors and timeouts are retried below, per event.
// (autoResendUnfulfilledCommands: false would be worse: ioredis 6 then drops those commands
// without settling their promises, and the producer hangs.)
const data = new Redis(env.DATA_URL!, { maxRetriesPerRequest: 1, retryStrategy: () => 50 });
data.on('error', () => undefined);
const ledger = new Redis(env.LEDGER_URL!, { maxRetriesPerRequest: null });
ledger.on('error', () => undefined);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Outgoing {
  fields: Array<string | Buffer>;
  eventId?: string;
  expect: Expectation;
}

function event(i: number): Outgoing {
  const flags: ChaosFlags = {};
  if (every('POISON_EVERY', i)) flags.poison = true;
  if (every('CRASH_EVERY', i)) flags.crashAfterEffect = true;
  if (env.EXIT_AT && Number(env.EXIT_AT) === i) flags.exit = true;
  if (env.CRASH_IN_EFFECT_AT && Number(env.CRASH_IN_EFFECT_AT) === i) flags.crashInEffect = true;
  const eventId = `${run}-e${i}`;
  const fields = encodeEnvelope({ eventId, data: { i, chaos: flags } }, codec);
  return { fields, eventId, expect: flags.poison || flags.exit ? 'dead-letter' : 'process' };
}

async function main(): Promise<void> {
  const outgoing =
    env.KIND === 'hostile'
      ? hostileEntries(run, total, num('SEED', 1))
      : Array.from({ length: total }, (_, n) => event(first + n));
  const started = Date.now();
  let retries = 0;
  let produced = 0;
  let queue = outgoing;
  while (queue.length > 0) {
    const batch = queue.slice(0, batchSize);
    queue = queue.slice(batchSize);
    const pipeline = data.pipeline();
    for (const e of batch) pipeline.xadd(stream, ...maxLen, '*', ...e.fields);
    const replies = await Promise.race([pipeline.exec(), sleep(BATCH_TIMEOUT_MS).then(() => null)]).catch(() => null);
    const failed: Outgoing[] = [];
    const record = ledger.pipeline();
    batch.forEach((e, n) => {
      const [err, id] = replies?.[n] ?? [new Error('no reply')];
      if (err || typeof id !== 'string') return void failed.push(e);
      const key = entryKey(e.eventId, id);
      record.hset(keys.produced, key, id).hset(keys.expect, key, e.expect);
    });
    await record.exec();
    produced += batch.length - failed.length;
    if (failed.length > 0) {
      retries += failed.length;
      queue = [...failed, ...queue];
      await sleep(50);
    }
    // Pace to RATE events per second over the whole run.
    if (rate > 0) await sleep(Math.max(0, started + (produced / rate) * 1000 - Date.now()));
  }
  process.send?.({ type: 'done', produced, retries, ms: Date.now() - started }, () => process.exit(0));
}

main().catch((err: Error) => {
  process.send?.({ type: 'error', message: err.stack ?? String(err) }, () => process.exit(1));
});
