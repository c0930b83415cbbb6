// Row 10 (issue 15, item 5): the client library is a choice, so it is measured. The drain rows
// (hand-written loop, and this transport at the throughput setting) and the transport's latency
// row run on every installed ioredis (the repository's own `ioredis` and its npm alias of the other
// major) and on ioredis 6 with settings that might help, alternating within one run. Each child
// loads its ioredis through bench/support/ioredis-select.ts and reports the copy it really used.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DoneMessage } from '../children/probe.js';
import { BenchChild } from '../support/bench-child.js';
import type { IoredisReport } from '../support/ioredis-select.js';
import { prefill } from '../support/prefill.js';
import { assertDrained } from '../support/redis.js';
import { fmtCount, fmtMs, fmtRate, fmtRatio, percentile, rate, sortedSamples } from '../support/stats.js';
import type { ResultRow } from '../support/table.js';
import { LATENCY, RAW_READ_COUNT, THROUGHPUT_SETTINGS } from '../settings.js';
import type { BenchContext } from './context.js';

/**
 * Client library rows (issue 15, item 5): entries per drain, the packages `ioredis` may resolve
 * to (the repository's own and npm aliases of the other major; those not installed are skipped),
 * and ioredis 6 settings tried on top of its defaults (`protocol: 3` is its default).
 */
export const CLIENT_LIBRARY = {
  entries: 100_000,
  /** Latency runs per variant, alternating (each lasts ~13 s). */
  latencyRounds: 2,
  packages: ['ioredis', 'ioredis5', 'ioredis6'],
  ioredis6Settings: {
    resp2: { protocol: 2 },
    autoPipelining: { enableAutoPipelining: true },
  } as Record<string, Record<string, unknown>>,
};

const STREAM = 'bench:ioredis';
const SELECT = fileURLToPath(new URL('../support/ioredis-select.js', import.meta.url));
const require = createRequire(import.meta.url);

interface Variant {
  key: string;
  label: string;
  /** The package `ioredis` resolves to in the child. */
  pkg: string;
  /** `name@version` the child must report having loaded. */
  expect: string;
  options: Record<string, unknown>;
}

interface Run {
  perSecond: number;
  consumerCpuUs: number;
}

/** The repository's `ioredis` first (the baseline), then the aliases installed beside it. */
function installed(): Array<{ pkg: string; version: string }> {
  const found: Array<{ pkg: string; version: string }> = [];
  for (const pkg of CLIENT_LIBRARY.packages) {
    try {
      const { version } = JSON.parse(readFileSync(require.resolve(`${pkg}/package.json`), 'utf8')) as { version: string };
      found.push({ pkg, version });
    } catch {
      // Not installed: an alias the repository does not carry (only the other major is aliased).
    }
  }
  return found;
}

function variants(): Variant[] {
  const list: Variant[] = [];
  for (const { pkg, version } of installed()) {
    const base = { pkg, expect: `ioredis@${version}`, options: {} };
    const suffix = pkg === 'ioredis' ? ' (repository default)' : '';
    list.push({ ...base, key: `v${version}`, label: `ioredis ${version}${suffix}` });
    if (!version.startsWith('6.')) continue;
    for (const [name, options] of Object.entries(CLIENT_LIBRARY.ioredis6Settings)) {
      list.push({ ...base, key: `v${version}-${name}`, label: `ioredis ${version}, ${JSON.stringify(options)}`, options });
    }
  }
  return list;
}

/** Forks `child` on `variant`'s ioredis and checks that the child loaded exactly that one. */
async function startOn(variant: Variant, child: string, env: Record<string, string | number>, execArgv: string[] = []) {
  return BenchChild.start(child, { ...env, BENCH_IOREDIS: variant.pkg, BENCH_IOREDIS_OPTIONS: JSON.stringify(variant.options) }, [
    '--import',
    SELECT,
    ...execArgv,
  ]);
}

function checkLoaded(variant: Variant, done: DoneMessage): void {
  const report = (done as DoneMessage & { ioredis?: IoredisReport }).ioredis;
  const loaded = report?.loaded.map((c) => c.version) ?? [];
  if (loaded.length !== 1 || loaded[0] !== variant.expect) {
    throw new Error(`A child meant to run on ${variant.expect} loaded ${loaded.join(', ') || 'no ioredis it reported'}.`);
  }
}

async function drainOn(
  ctx: BenchContext,
  variant: Variant,
  child: string,
  group: string,
  env: Record<string, string | number>,
  execArgv: string[] = [],
): Promise<Run> {
  const consumer = await startOn(
    variant,
    child,
    { REDIS_URL: ctx.url, STREAM, GROUP: group, EXPECT: CLIENT_LIBRARY.entries, ...env },
    execArgv,
  );
  try {
    const done = await consumer.next<DoneMessage>('done', 120_000);
    checkLoaded(variant, done);
    await assertDrained(ctx.redis, STREAM, group, CLIENT_LIBRARY.entries);
    return { perSecond: rate(done.count, done.elapsedMs), consumerCpuUs: (done.cpuMs * 1_000) / done.count };
  } finally {
    await consumer.stop();
  }
}

/** p50 and p99 of XADD → handler start for the transport on `variant`, paced as row 4. */
async function latencyOn(ctx: BenchContext, variant: Variant): Promise<number[]> {
  const stream = `bench:ioredis:latency:${variant.key}`;
  const warmup = LATENCY.rate * LATENCY.warmupSeconds;
  const total = warmup + LATENCY.rate * LATENCY.seconds;
  const consumer = await startOn(variant, 'transport-consumer', {
    REDIS_URL: ctx.url,
    STREAM: stream,
    GROUP: 'latency',
    EXPECT: total,
    WARMUP: warmup,
    LATENCY: 1,
    CONCURRENCY: THROUGHPUT_SETTINGS.concurrency,
    PREFETCH: THROUGHPUT_SETTINGS.prefetchCount,
  });
  try {
    // The producer runs on the repository's ioredis in every variant: only the consumer changes.
    const producer = await BenchChild.start('paced-producer', {
      REDIS_URL: ctx.url,
      STREAM: stream,
      RATE: LATENCY.rate,
      TOTAL: total,
    });
    await producer.next('done', 60_000);
    const done = await consumer.next<DoneMessage>('done', 30_000);
    checkLoaded(variant, done);
    const sorted = sortedSamples(done.latenciesMs);
    return [percentile(sorted, 50), percentile(sorted, 99)];
  } finally {
    await consumer.stop();
    await ctx.redis.del(stream);
  }
}

const range = (values: number[], fmt: (v: number) => string) => {
  const [lo, hi] = [fmt(Math.min(...values)), fmt(Math.max(...values))];
  return lo === hi ? lo : `${lo}–${hi}`;
};
const fmtPlain = (v: number) => Math.round(v).toLocaleString('en-US');
const best = (runs: Run[]) => Math.max(...runs.map((r) => r.perSecond));
const leastCpu = (runs: Run[]) => Math.min(...runs.map((r) => r.consumerCpuUs));

/**
 * Every round runs each variant's loop and transport on fresh groups of one pre-filled stream;
 * ratios are against the repository's own ioredis, best against best, with the range of the
 * round-by-round ratios beside them. Then the latency runs, alternating the same way.
 */
export async function clientLibraryRows(ctx: BenchContext, rounds = 3): Promise<ResultRow[]> {
  const all = variants();
  const { entries } = CLIENT_LIBRARY;
  const fill = await prefill(ctx.url, STREAM, entries);
  ctx.log(
    `client library: pre-filled ${fmtCount(entries)} entries (${fmtRate(fill)}); variants ${all.map((v) => v.label).join(' | ')}`,
  );
  const raws = new Map<string, Run[]>(all.map((v) => [v.key, []]));
  const nests = new Map<string, Run[]>(all.map((v) => [v.key, []]));
  for (let round = 1; round <= rounds; round++) {
    for (const v of all) {
      const raw = await drainOn(ctx, v, 'raw-consumer', `io-raw-${v.key}-${round}`, { READ_COUNT: RAW_READ_COUNT });
      // One folder per variant: the loader thread of the resolve hook writes a profile of its own
      // (the main thread's file has thread id 0 in its name: CPU.<date>.<time>.<pid>.0.<n>).
      const profile =
        round === 1 && ctx.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${join(ctx.profileDir, `transport-${v.key}`)}`] : [];
      const nest = await drainOn(
        ctx,
        v,
        'transport-consumer',
        `io-transport-${v.key}-${round}`,
        { CONCURRENCY: THROUGHPUT_SETTINGS.concurrency, PREFETCH: THROUGHPUT_SETTINGS.prefetchCount },
        profile,
      );
      raws.get(v.key)!.push(raw);
      nests.get(v.key)!.push(nest);
      ctx.log(
        `client library round ${round}, ${v.label}: loop ${fmtRate(raw.perSecond)} (${raw.consumerCpuUs.toFixed(1)} µs CPU/entry), transport ${fmtRate(nest.perSecond)} (${nest.consumerCpuUs.toFixed(1)} µs)`,
      );
    }
  }
  await ctx.redis.del(STREAM);
  // Latency runs alternate too: a burst of load elsewhere lands on one run, not on one variant.
  const latencies = new Map<string, number[][]>(all.map((v) => [v.key, []]));
  for (let round = 1; round <= CLIENT_LIBRARY.latencyRounds; round++) {
    for (const v of all) {
      const measured = await latencyOn(ctx, v);
      latencies.get(v.key)!.push(measured);
      ctx.log(`client library latency round ${round}, ${v.label}: p50 / p99 ${measured.map(fmtMs).join(' / ')} ms`);
    }
  }
  const base = all[0].key;
  const rows: ResultRow[] = [];
  const drainRow = (v: Variant, what: string, setting: string, runs: Map<string, Run[]>): ResultRow => {
    const mine = runs.get(v.key)!;
    const theirs = runs.get(base)!;
    const perRound = mine.map((r, i) => r.perSecond / theirs[i].perSecond);
    return {
      row: '10',
      what: `${what}, ${v.label}`,
      setting: `${setting}; ${range(
        mine.map((r) => r.perSecond),
        fmtPlain,
      )} over ${rounds} rounds`,
      result: fmtRate(best(mine)),
      ratio: v.key === base ? fmtRatio(1) : `${fmtRatio(best(mine) / best(theirs))} (rounds ${range(perRound, fmtRatio)})`,
      target: v.key === base ? 'baseline' : 'info',
    };
  };
  for (const v of all) {
    rows.push(drainRow(v, 'drain, hand-written loop', `${fmtCount(entries)} entries, COUNT ${RAW_READ_COUNT}`, raws));
  }
  for (const v of all) {
    const { concurrency, prefetchCount } = THROUGHPUT_SETTINGS;
    rows.push(drainRow(v, 'drain, this transport', `concurrency ${concurrency}, prefetchCount ${prefetchCount}`, nests));
  }
  // CPU time per entry moves much less than wall time when other work shares the machine.
  for (const v of all) {
    const [raw, nest] = [leastCpu(raws.get(v.key)!), leastCpu(nests.get(v.key)!)];
    const [baseRaw, baseNest] = [leastCpu(raws.get(base)!), leastCpu(nests.get(base)!)];
    rows.push({
      row: '10',
      what: `consumer CPU per entry, loop → transport, ${v.label}`,
      setting: `least of ${rounds} rounds of the two drain rows above`,
      result: `${raw.toFixed(1)} → ${nest.toFixed(1)} µs`,
      ratio: v.key === base ? fmtRatio(1) : `${fmtRatio(raw / baseRaw)} → ${fmtRatio(nest / baseNest)}`,
      target: v.key === base ? 'baseline' : 'info',
    });
  }
  // The least of each percentile over the rounds: other load only ever lengthens a tail.
  const least = (key: string, i: number) => Math.min(...latencies.get(key)!.map((m) => m[i]));
  for (const v of all) {
    const runs = latencies.get(v.key)!;
    rows.push({
      row: '10',
      what: `latency p50 / p99, this transport, ${v.label}`,
      setting: `${fmtCount(LATENCY.rate)}/s for ${LATENCY.seconds} s, ${runs.length} runs; ratios of the least`,
      result: `${range(
        runs.map((m) => m[0]),
        fmtMs,
      )} / ${range(
        runs.map((m) => m[1]),
        fmtMs,
      )} ms`,
      ratio: `${fmtRatio(least(v.key, 0) / least(base, 0))} / ${fmtRatio(least(v.key, 1) / least(base, 1))}`,
      target: v.key === base ? 'baseline' : 'info',
    });
  }
  return rows;
}
