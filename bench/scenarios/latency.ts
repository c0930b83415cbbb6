// Row 4: XADD → handler-start latency at a fixed rate, for the hand-written loop (baseline), the
// same loop in a process that has loaded NestJS, and this transport, each fed by a paced producer
// in its own process.
import type { DoneMessage } from '../children/probe.js';
import { BenchChild } from '../support/bench-child.js';
import { fmtCount, fmtMs, fmtRatio, percentile, sortedSamples } from '../support/stats.js';
import type { ResultRow } from '../support/table.js';
import { LATENCY, RAW_READ_COUNT, TARGETS, THROUGHPUT_SETTINGS } from '../settings.js';
import type { BenchContext } from './context.js';

const PERCENTILES = [50, 99, 99.9] as const;

interface Measured {
  percentiles: number[];
  received: number;
  producedPerSecond: number;
}

async function measure(
  ctx: BenchContext,
  kind: 'raw' | 'raw-nest' | 'transport' | 'direct',
  consumerEnv: Record<string, string | number>,
): Promise<Measured> {
  const stream = `bench:latency:${kind}`;
  const warmup = LATENCY.rate * LATENCY.warmupSeconds;
  const total = warmup + LATENCY.rate * LATENCY.seconds;
  const child = kind === 'transport' ? 'transport-consumer' : kind === 'direct' ? 'direct-consumer' : 'raw-consumer';
  const consumer = await BenchChild.start(child, {
    REDIS_URL: ctx.url,
    STREAM: stream,
    GROUP: 'latency',
    EXPECT: total,
    WARMUP: warmup,
    LATENCY: 1,
    ...consumerEnv,
  });
  try {
    const producer = await BenchChild.start('paced-producer', {
      REDIS_URL: ctx.url,
      STREAM: stream,
      RATE: LATENCY.rate,
      TOTAL: total,
    });
    const sent = await producer.next<{ type: 'done'; sent: number; seconds: number }>('done', 60_000);
    const done = await consumer.next<DoneMessage>('done', 30_000);
    const sorted = sortedSamples(done.latenciesMs);
    await ctx.redis.del(stream);
    return {
      percentiles: PERCENTILES.map((p) => percentile(sorted, p)),
      received: sorted.length,
      producedPerSecond: sent.sent / sent.seconds,
    };
  } finally {
    await consumer.stop();
  }
}

const fmtTriple = (values: number[]) => `${values.map(fmtMs).join(' / ')} ms`;

export async function latencyRows(ctx: BenchContext): Promise<ResultRow[]> {
  const raw = await measure(ctx, 'raw', { READ_COUNT: RAW_READ_COUNT });
  const rawNest = await measure(ctx, 'raw-nest', { READ_COUNT: RAW_READ_COUNT, LOAD_NEST: 1 });
  const throughput = { CONCURRENCY: THROUGHPUT_SETTINGS.concurrency, PREFETCH: THROUGHPUT_SETTINGS.prefetchCount };
  const transport = await measure(ctx, 'transport', throughput);
  const direct = await measure(ctx, 'direct', throughput);
  const measured = [
    ['raw loop', raw],
    ['raw loop, NestJS loaded', rawNest],
    ['transport', transport],
    ['transport, direct handlers', direct],
  ] as const;
  for (const [name, m] of measured) {
    ctx.log(
      `latency ${name}: p50/p99/p99.9 ${fmtTriple(m.percentiles)}, ${fmtCount(m.received)} measured, producer at ${Math.round(m.producedPerSecond)}/s`,
    );
  }
  const setting = `${fmtCount(LATENCY.rate)}/s for ${LATENCY.seconds} s (+${LATENCY.warmupSeconds} s warm-up), paced producer process`;
  const ratios = (m: Measured, base: Measured) => m.percentiles.map((v, i) => fmtRatio(v / base.percentiles[i])).join(' / ');
  const p99Ratio = (m: Measured) => m.percentiles[1] / rawNest.percentiles[1];
  const transportSetting = `${setting}, concurrency ${THROUGHPUT_SETTINGS.concurrency}, prefetchCount ${THROUGHPUT_SETTINGS.prefetchCount}`;
  return [
    {
      row: '4',
      what: 'latency XADD→handler p50 / p99 / p99.9, hand-written loop',
      setting: `${setting}, COUNT ${RAW_READ_COUNT}`,
      result: fmtTriple(raw.percentiles),
      ratio: '1×',
      target: 'info',
    },
    {
      row: '4',
      what: 'the same loop in a process with NestJS loaded',
      setting: 'as above; imports @nestjs/core, microservices, schedule and this library, uses none',
      result: fmtTriple(rawNest.percentiles),
      ratio: `${ratios(rawNest, raw)} of the plain loop`,
      target: 'baseline',
    },
    {
      row: '4',
      what: 'latency XADD→handler p50 / p99 / p99.9, this transport',
      setting: transportSetting,
      result: fmtTriple(transport.percentiles),
      ratio: ratios(transport, rawNest),
      target: `p99 ≤ ${TARGETS.p99Ratio}×`,
      met: p99Ratio(transport) <= TARGETS.p99Ratio,
    },
    {
      row: '4',
      what: 'the same with direct handlers (opt-in)',
      setting: `${transportSetting}, server.useDirectHandlers(app)`,
      result: fmtTriple(direct.percentiles),
      ratio: ratios(direct, rawNest),
      target: `p99 ≤ ${TARGETS.p99Ratio}×`,
      met: p99Ratio(direct) <= TARGETS.p99Ratio,
    },
  ];
}
