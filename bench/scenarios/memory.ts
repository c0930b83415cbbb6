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

export async function memoryRows(ctx: BenchContext): Promise<ResultRow[]> {
  const fill = await prefill(ctx.url, STREAM, MEMORY.entries);
  ctx.log(`pre-filled ${fmtCount(MEMORY.entries)} entries (${fmtRate(fill)} pipelined XADD)`);
  try {
    const raw = await footprint(ctx, 'raw-consumer', 'memory-raw', { READ_COUNT: RAW_READ_COUNT });
    const rawNest = await footprint(ctx, 'raw-consumer', 'memory-raw-nest', { READ_COUNT: RAW_READ_COUNT, LOAD_NEST: 1 });
    const settings = { CONCURRENCY: THROUGHPUT_SETTINGS.concurrency, PREFETCH: THROUGHPUT_SETTINGS.prefetchCount };
    const transport = await footprint(ctx, 'transport-consumer', 'memory-transport', settings);
    const direct = await footprint(ctx, 'direct-consumer', 'memory-direct', settings);
    // V8 grows the young generation to 16 MiB semi-spaces under a high allocation rate; a smaller
    // cap is a deployment choice (NODE_OPTIONS), measured here so the README can quote it.
    const capped = await footprint(ctx, 'transport-consumer', 'memory-transport-capped', settings, [
      MEMORY.cappedYoungGeneration,
    ]);
    for (const [name, f] of [
      ['raw loop', raw],
      ['raw loop, NestJS loaded', rawNest],
      ['transport', transport],
      ['transport, direct handlers', direct],
      [`transport ${MEMORY.cappedYoungGeneration}`, capped],
    ] as const) {
      ctx.log(`memory ${name}: idle ${mib(f.idle)}, peak ${mib(f.peak)} while draining at ${fmtRate(f.perSecond)}`);
    }
    // Issue 15's reference: the peak of the loop in a process with NestJS loaded, same run.
    const ratio = transport.peak / rawNest.peak;
    const directRatio = direct.peak / rawNest.peak;
    const backlog = `${fmtCount(MEMORY.entries)}-entry backlog`;
    return [
      {
        row: '6',
        what: 'RSS, idle consumer (baseline)',
        setting: `transport after ${MEMORY.idleMs / 1_000} s idle, backlog not yet visible`,
        result: mib(transport.idle),
        ratio: fmtRatio(1),
        target: 'baseline',
      },
      {
        row: '6',
        what: 'peak RSS while a backlog drains, this transport',
        setting: `${backlog} at ${fmtRate(transport.perSecond)}, concurrency ${THROUGHPUT_SETTINGS.concurrency}, prefetchCount ${THROUGHPUT_SETTINGS.prefetchCount}`,
        result: mib(transport.peak),
        ratio: `${fmtRatio(ratio)} of the NestJS-loaded loop's peak; ${fmtRatio(transport.peak / transport.idle)} of its idle`,
        target: `≤ ${TARGETS.memoryRatio}×`,
        met: ratio <= TARGETS.memoryRatio,
      },
      {
        row: '6',
        what: 'the same with direct handlers (opt-in)',
        setting: `${backlog} at ${fmtRate(direct.perSecond)}; idle ${mib(direct.idle)}`,
        result: mib(direct.peak),
        ratio: `${fmtRatio(directRatio)} of the NestJS-loaded loop's peak`,
        target: `≤ ${TARGETS.memoryRatio}×`,
        met: directRatio <= TARGETS.memoryRatio,
      },
      {
        row: '6',
        what: `the same, node ${MEMORY.cappedYoungGeneration}`,
        setting: `${backlog} at ${fmtRate(capped.perSecond)}; idle ${mib(capped.idle)}`,
        result: mib(capped.peak),
        ratio: `${fmtRatio(capped.peak / capped.idle)} of its idle`,
        target: 'info',
      },
      {
        row: '6',
        what: 'peak RSS while a backlog drains, hand-written loop',
        setting: `${backlog} at ${fmtRate(raw.perSecond)}, COUNT ${RAW_READ_COUNT}; idle ${mib(raw.idle)}`,
        result: mib(raw.peak),
        ratio: `${fmtRatio(raw.peak / raw.idle)} of its idle`,
        target: 'reference',
      },
      {
        row: '6',
        what: 'the same loop in a process with NestJS loaded',
        setting: `${backlog} at ${fmtRate(rawNest.perSecond)}; idle ${mib(rawNest.idle)}`,
        result: mib(rawNest.peak),
        ratio: `${fmtRatio(rawNest.peak / rawNest.idle)} of its idle`,
        target: 'baseline',
      },
    ];
  } finally {
    await ctx.redis.del(STREAM);
  }
}
