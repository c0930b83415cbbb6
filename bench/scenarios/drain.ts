// Rows 1-3: the hand-written loop (the limit), this transport with a no-op handler, and this
// transport with a 1 ms handler at several concurrencies, all reading one pre-filled stream.
import { setTimeout as sleep } from 'node:timers/promises';
import type { DoneMessage } from '../children/probe.js';
import { BenchChild } from '../support/bench-child.js';
import { prefill } from '../support/prefill.js';
import { assertDrained, redisCpuMs } from '../support/redis.js';
import { fmtCount, fmtRate, fmtRatio, rate } from '../support/stats.js';
import type { ResultRow } from '../support/table.js';
import { DRAIN_ENTRIES, RAW_READ_COUNT, SLEEP_MS, SLEEP_RUNS, TARGETS, THROUGHPUT_SETTINGS, WIDE_SETTINGS } from '../settings.js';
import type { BenchContext } from './context.js';

const STREAM = 'bench:drain';

export interface Drained {
  perSecond: number;
  /** CPU time per entry in µs: the consumer process and redis-server, for a noisy machine. */
  consumerCpuUs: number;
  redisCpuUs: number;
}

/** Runs one consumer child on a fresh group until it acked `expect` entries. */
export async function drain(
  ctx: BenchContext,
  child: string,
  group: string,
  expect: number,
  env: Record<string, string | number>,
  execArgv: string[] = [],
  stream = STREAM,
): Promise<Drained> {
  // Before the start: the transport begins reading inside listen(), before it reports ready.
  const redisBefore = await redisCpuMs(ctx.redis);
  const consumer = await BenchChild.start(
    child,
    { REDIS_URL: ctx.url, STREAM: stream, GROUP: group, EXPECT: expect, ...env },
    execArgv,
  );
  try {
    const done = await consumer.next<DoneMessage>('done', 120_000);
    const redisMs = (await redisCpuMs(ctx.redis)) - redisBefore;
    await assertDrained(ctx.redis, stream, group, expect);
    return {
      perSecond: rate(done.count, done.elapsedMs),
      consumerCpuUs: (done.cpuMs * 1_000) / done.count,
      redisCpuUs: (redisMs * 1_000) / done.count,
    };
  } finally {
    await consumer.stop();
  }
}

const best = (runs: Drained[], key: keyof Drained) => Math.max(...runs.map((r) => r[key]));
const least = (runs: Drained[], key: keyof Drained) => Math.min(...runs.map((r) => r[key]));

const describe = (d: Drained) =>
  `${fmtRate(d.perSecond)} (CPU per entry: consumer ${d.consumerCpuUs.toFixed(1)} µs, redis ${d.redisCpuUs.toFixed(1)} µs)`;

export const profileArgs = (ctx: BenchContext) => (ctx.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${ctx.profileDir}`] : []);

/**
 * Rows 1 and 2 alternate (raw, transport, raw, transport) and keep each one's best run, so a
 * burst of load from elsewhere on the machine does not decide the ratio.
 */
export async function drainRows(ctx: BenchContext, rounds = 3): Promise<{ rows: ResultRow[]; limit: number }> {
  const fill = await prefill(ctx.url, STREAM, DRAIN_ENTRIES);
  ctx.log(`pre-filled ${fmtCount(DRAIN_ENTRIES)} entries (${fmtRate(fill)} pipelined XADD)`);
  const raws: Drained[] = [];
  const nests: Drained[] = [];
  const wides: Drained[] = [];
  for (let round = 1; round <= rounds; round++) {
    const raw = await drain(ctx, 'raw-consumer', `raw-${round}`, DRAIN_ENTRIES, { READ_COUNT: RAW_READ_COUNT });
    const nest = await drain(
      ctx,
      'transport-consumer',
      `transport-${round}`,
      DRAIN_ENTRIES,
      {
        CONCURRENCY: THROUGHPUT_SETTINGS.concurrency,
        PREFETCH: THROUGHPUT_SETTINGS.prefetchCount,
      },
      round === 1 ? profileArgs(ctx) : [],
    );
    const wide = await drain(ctx, 'transport-consumer', `transport-wide-${round}`, DRAIN_ENTRIES, {
      CONCURRENCY: WIDE_SETTINGS.concurrency,
      PREFETCH: WIDE_SETTINGS.prefetchCount,
    });
    ctx.log(`drain round ${round}: raw loop ${describe(raw)}`);
    ctx.log(`drain round ${round}: transport ${describe(nest)}`);
    ctx.log(`drain round ${round}: transport, concurrency ${WIDE_SETTINGS.concurrency} ${describe(wide)}`);
    raws.push(raw);
    nests.push(nest);
    wides.push(wide);
  }
  const limit = best(raws, 'perSecond');
  const transport = best(nests, 'perSecond');
  const transportWide = best(wides, 'perSecond');
  const ratio = transport / limit;
  // Other load inflates CPU time less than wall time, so the smallest CPU cost is the cleanest.
  const cpu = (runs: Drained[]) => least(runs, 'consumerCpuUs') + least(runs, 'redisCpuUs');
  // Unrounded: the table prints 0.1 µs steps, the ratio is taken on what was measured.
  const redisRatio = least(nests, 'redisCpuUs') / least(raws, 'redisCpuUs');
  const cpuText = (runs: Drained[]) => `${least(runs, 'consumerCpuUs').toFixed(1)} + ${least(runs, 'redisCpuUs').toFixed(1)} µs`;
  const rows: ResultRow[] = [
    {
      row: '1',
      what: 'drain, hand-written ioredis loop (limit)',
      setting: `${fmtCount(DRAIN_ENTRIES)} entries, COUNT ${RAW_READ_COUNT}, 1 XACK/batch, best of ${rounds}`,
      result: fmtRate(limit),
      ratio: fmtRatio(1),
      target: 'baseline',
    },
    {
      row: '2',
      what: 'drain, this transport, no-op handler',
      setting: `${fmtCount(DRAIN_ENTRIES)} entries, concurrency ${THROUGHPUT_SETTINGS.concurrency}, prefetchCount ${THROUGHPUT_SETTINGS.prefetchCount}, best of ${rounds}`,
      result: fmtRate(transport),
      ratio: fmtRatio(ratio),
      target: `≥ ${TARGETS.drainRatio}×`,
      met: ratio >= TARGETS.drainRatio,
    },
    {
      row: '2',
      what: 'the same, every read-ahead entry running',
      setting: `concurrency ${WIDE_SETTINGS.concurrency}, prefetchCount ${WIDE_SETTINGS.prefetchCount}, best of ${rounds}`,
      result: fmtRate(transportWide),
      ratio: fmtRatio(transportWide / limit),
      target: 'info',
    },
    {
      row: '2',
      what: 'CPU per entry (consumer + redis-server), raw loop → transport',
      setting: `least of ${rounds} rounds of rows 1 and 2`,
      result: `${cpuText(raws)} → ${cpuText(nests)}`,
      ratio: `${fmtRatio(cpu(raws) / cpu(nests))} efficiency`,
      target: 'info',
    },
    {
      row: '2',
      what: 'redis-server CPU per entry, raw loop → transport',
      setting: `least of ${rounds} rounds of rows 1 and 2`,
      result: `${least(raws, 'redisCpuUs').toFixed(1)} → ${least(nests, 'redisCpuUs').toFixed(1)} µs`,
      ratio: fmtRatio(redisRatio),
      target: `≤ ${TARGETS.redisCpuRatio}×`,
      met: redisRatio <= TARGETS.redisCpuRatio,
    },
  ];
  return { rows, limit };
}

/** Mean real duration of `await setTimeout(SLEEP_MS)` here: timers overshoot, so 1 ms is ~1.1+ ms. */
async function measureSleepMs(samples = 200): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < samples; i++) await sleep(SLEEP_MS);
  return (performance.now() - started) / samples;
}

/**
 * Row 3: a 1 ms async handler. The baseline of each setting is what the handler allows at best,
 * concurrency × (1 s / the timer's real duration), capped by the raw loop's limit.
 */
export async function sleepRows(ctx: BenchContext, limit: number): Promise<ResultRow[]> {
  const sleepMs = await measureSleepMs();
  ctx.log(`await setTimeout(${SLEEP_MS}) takes ${sleepMs.toFixed(3)} ms on average here`);
  const rows: ResultRow[] = [];
  for (const { concurrency, entries } of SLEEP_RUNS) {
    const prefetch = Math.max(THROUGHPUT_SETTINGS.prefetchCount, concurrency);
    const { perSecond } = await drain(ctx, 'transport-consumer', `sleep-${concurrency}`, entries, {
      CONCURRENCY: concurrency,
      PREFETCH: prefetch,
      SLEEP_MS,
    });
    const ideal = Math.min(limit || Infinity, (concurrency * 1_000) / sleepMs);
    ctx.log(`${SLEEP_MS} ms handler, concurrency ${concurrency}: ${fmtRate(perSecond)}`);
    rows.push({
      row: '3',
      what: `${SLEEP_MS} ms async handler, concurrency ${concurrency}`,
      setting: `${fmtCount(entries)} entries, prefetchCount ${prefetch}`,
      result: fmtRate(perSecond),
      ratio: `${fmtRatio(perSecond / ideal)} of ${fmtRate(ideal)}`,
      target: 'info',
    });
  }
  await ctx.redis.del(STREAM);
  return rows;
}
