// Row 6: a consumer's memory while a large backlog drains must stay flat: prefetchCount bounds
// what it holds, however long the stream is. The hand-written loop is measured the same way, to
// show how much of the growth any Node consumer has (V8 sizes its heap to the allocation rate).
import type { DoneMessage } from '../children/probe.js';
import { BenchChild } from '../support/bench-child.js';
import { prefill } from '../support/prefill.js';
import { fmtCount, fmtRate, fmtRatio, rate } from '../support/stats.js';
import type { ResultRow } from '../support/table.js';
import { MEMORY, RAW_READ_COUNT, TARGETS, THROUGHPUT_SETTINGS } from '../settings.js';
import type { BenchContext } from './context.js';

const STREAM = 'bench:memory';

interface Footprint {
  idle: number;
  peak: number;
  perSecond: number;
}

/** Idle RSS with the backlog unseen, then peak RSS while the child drains all of it (MiB). */
async function footprint(
  ctx: BenchContext,
  child: string,
  group: string,
  env: Record<string, string | number>,
  execArgv: string[] = [],
): Promise<Footprint> {
  // The group starts at the end, so the consumer first sits idle with the backlog unseen.
  await ctx.redis.xgroup('CREATE', STREAM, group, '$');
  const consumer = await BenchChild.start(
    child,
    { REDIS_URL: ctx.url, STREAM, GROUP: group, EXPECT: MEMORY.entries, BLOCK_MS: 100, ...env },
    execArgv,
  );
  try {
    await new Promise((resolve) => setTimeout(resolve, MEMORY.idleMs));
    const idle = consumer.memoryMiB('VmRSS');
    const peakWasReset = consumer.resetPeak();
    // Rewinding the group hands the whole backlog to the waiting consumer at its next read.
    await ctx.redis.xgroup('SETID', STREAM, group, '0');
    let sampled = 0;
    const sampler = setInterval(() => (sampled = Math.max(sampled, consumer.memoryMiB('VmRSS'))), MEMORY.sampleEveryMs);
    const done = await consumer.next<DoneMessage>('done', 150_000).finally(() => clearInterval(sampler));
    const peak = peakWasReset ? Math.max(sampled, consumer.memoryMiB('VmHWM')) : sampled;
    return { idle, peak, perSecond: rate(done.count, done.elapsedMs) };
  } finally {
    await consumer.stop();
  }
}

const mib = (value: number) => `${value.toFixed(1)} MiB`;

/** The round with the median peak of a consumer's rounds (its idle and rate come with it). */
function medianPeak(rounds: Footprint[]): Footprint {
  return [...rounds].sort((a, b) => a.peak - b.peak)[Math.floor(rounds.length / 2)];
}

/**
 * The five consumers alternate over `rounds` rounds (loop, loop with NestJS, transport, pipeline,
 * capped, then again) and each row gives the round with its median peak: one consumer's peak moved
 * by up to 25 % between identical runs (V8 sizes its heap to what it saw so far), so a single
 * reading of the reference cannot carry a 1.1x target.
 */
export async function memoryRows(ctx: BenchContext, rounds = MEMORY.rounds): Promise<ResultRow[]> {
  const fill = await prefill(ctx.url, STREAM, MEMORY.entries);
  ctx.log(`pre-filled ${fmtCount(MEMORY.entries)} entries (${fmtRate(fill)} pipelined XADD)`);
  try {
    const settings = { CONCURRENCY: THROUGHPUT_SETTINGS.concurrency, PREFETCH: THROUGHPUT_SETTINGS.prefetchCount };
    // V8 grows the young generation to 16 MiB semi-spaces under a high allocation rate; a smaller
    // cap is a deployment choice (NODE_OPTIONS), measured here so the README can quote it.
    const variants = [
      ['raw loop', 'raw-consumer', { READ_COUNT: RAW_READ_COUNT }, []],
      ['raw loop, NestJS loaded', 'raw-consumer', { READ_COUNT: RAW_READ_COUNT, LOAD_NEST: 1 }, []],
      ['transport', 'transport-consumer', settings, []],
      ['transport, directHandlers: false', 'transport-consumer', { ...settings, DIRECT_HANDLERS: 'false' }, []],
      [`transport ${MEMORY.cappedYoungGeneration}`, 'transport-consumer', settings, [MEMORY.cappedYoungGeneration]],
    ] as const;
    const measured: Footprint[][] = variants.map(() => []);
    for (let round = 1; round <= rounds; round++) {
      for (const [i, [name, child, env, execArgv]] of variants.entries()) {
        const f = await footprint(ctx, child, `memory-${i}-${round}`, env, [...execArgv]);
        measured[i].push(f);
        ctx.log(
          `memory round ${round}, ${name}: idle ${mib(f.idle)}, peak ${mib(f.peak)} while draining at ${fmtRate(f.perSecond)}`,
        );
      }
    }
    const [raw, rawNest, transport, pipeline, capped] = measured.map(medianPeak);
    const peaks = (i: number) => measured[i].map((f) => f.peak.toFixed(1)).join(', ');
    // Issue 15's reference: the peak of the loop in a process with NestJS loaded, same run.
    const ratio = transport.peak / rawNest.peak;
    const backlog = `${fmtCount(MEMORY.entries)}-entry backlog`;
    return [
      {
        row: '6',
        what: 'RSS, idle consumer (baseline)',
        setting: `transport after ${MEMORY.idleMs / 1_000} s idle, backlog not yet visible; the round with the median peak of ${rounds}`,
        result: mib(transport.idle),
        ratio: fmtRatio(1),
        target: 'baseline',
      },
      {
        row: '6',
        what: 'peak RSS while a backlog drains, this transport as shipped (direct handlers)',
        setting: `${backlog} at ${fmtRate(transport.perSecond)}, concurrency ${THROUGHPUT_SETTINGS.concurrency}, prefetchCount ${THROUGHPUT_SETTINGS.prefetchCount} (peaks ${peaks(2)} MiB)`,
        result: mib(transport.peak),
        ratio: `${fmtRatio(ratio)} of the NestJS-loaded loop's peak; ${fmtRatio(transport.peak / transport.idle)} of its idle`,
        target: `≤ ${TARGETS.memoryRatio}×`,
        met: ratio <= TARGETS.memoryRatio,
      },
      {
        row: '6',
        what: "the same through Nest's pipeline (directHandlers: false)",
        setting: `${backlog} at ${fmtRate(pipeline.perSecond)}; idle ${mib(pipeline.idle)} (peaks ${peaks(3)} MiB)`,
        result: mib(pipeline.peak),
        ratio: `${fmtRatio(pipeline.peak / rawNest.peak)} of the NestJS-loaded loop's peak; as shipped ${fmtRatio(transport.peak / pipeline.peak)} of it`,
        target: 'info',
      },
      {
        row: '6',
        what: `the same, node ${MEMORY.cappedYoungGeneration}`,
        setting: `${backlog} at ${fmtRate(capped.perSecond)}; idle ${mib(capped.idle)} (peaks ${peaks(4)} MiB)`,
        result: mib(capped.peak),
        ratio: `${fmtRatio(capped.peak / capped.idle)} of its idle`,
        target: 'info',
      },
      {
        row: '6',
        what: 'peak RSS while a backlog drains, hand-written loop',
        setting: `${backlog} at ${fmtRate(raw.perSecond)}, COUNT ${RAW_READ_COUNT}; idle ${mib(raw.idle)} (peaks ${peaks(0)} MiB)`,
        result: mib(raw.peak),
        ratio: `${fmtRatio(raw.peak / raw.idle)} of its idle`,
        target: 'reference',
      },
      {
        row: '6',
        what: 'the same loop in a process with NestJS loaded',
        setting: `${backlog} at ${fmtRate(rawNest.perSecond)}; idle ${mib(rawNest.idle)} (peaks ${peaks(1)} MiB)`,
        result: mib(rawNest.peak),
        ratio: `${fmtRatio(rawNest.peak / rawNest.idle)} of its idle`,
        target: 'baseline',
      },
    ];
  } finally {
    await ctx.redis.del(STREAM);
  }
}
