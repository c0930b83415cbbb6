// Row 9 (issue 15): what a user gets without tuning. This transport with no options at all, the
// same no-op handler at concurrency 1 with each read-ahead a default could have, the other NestJS
// Redis Streams transport with its own defaults, and the hand-written loop, on one stream.
import { prefill } from '../support/prefill.js';
import { fmtCount, fmtRate, fmtRatio } from '../support/stats.js';
import type { ResultRow } from '../support/table.js';
import { DEFAULTS_SET, RAW_READ_COUNT } from '../settings.js';
import type { BenchContext } from './context.js';
import { type Drained, drain } from './drain.js';

/** `prefix:pattern`: the other transport reads `${streamPrefix}:${pattern}`. */
const STREAM = 'bench:defaults';
/** The other transport handles only entries that carry this field (`e: '1'` marks an event). */
const EVENT_MARKER = ['e', '1'];

interface Variant {
  key: string;
  what: string;
  setting: string;
  child: string;
  env: Record<string, number>;
}

function variants(): Variant[] {
  const { entries, prefetchCounts } = DEFAULTS_SET;
  const n = `${fmtCount(entries)} entries`;
  return [
    {
      key: 'raw',
      what: 'hand-written ioredis loop',
      setting: `${n}, COUNT ${RAW_READ_COUNT}`,
      child: 'raw-consumer',
      env: { READ_COUNT: RAW_READ_COUNT },
    },
    {
      key: 'other',
      what: '@nestjs-redis/streams-transporter, its own defaults',
      setting: `${n}; COUNT 50, handlers one at a time, one XACK each`,
      child: 'other-transport-consumer',
      env: {},
    },
    { key: 'none', what: 'this transport, no options at all', setting: `${n}; as shipped`, child: 'transport-consumer', env: {} },
    ...prefetchCounts.map((prefetch) => ({
      key: `prefetch-${prefetch}`,
      what: `this transport, concurrency 1, prefetchCount ${prefetch}`,
      setting: `${n}; a default read-ahead of ${prefetch}`,
      child: 'transport-consumer',
      env: { CONCURRENCY: 1, PREFETCH: prefetch },
    })),
  ];
}

const range = (values: number[], fmt: (v: number) => string) => {
  const [lo, hi] = [fmt(Math.min(...values)), fmt(Math.max(...values))];
  return lo === hi ? lo : `${lo} – ${hi}`;
};
const fmtPlain = (v: number) => Math.round(v).toLocaleString('en-US');
const ratios = (a: Drained[], b: Drained[]) => a.map((run, i) => run.perSecond / b[i].perSecond);

/**
 * Every variant runs once per round, in the same order, on a fresh group; each row gives the
 * range over the rounds, and its ratios are taken round by round (runs seconds apart).
 */
export async function defaultsRows(ctx: BenchContext, rounds = 3): Promise<ResultRow[]> {
  const { entries, otherRatio, rawRatio } = DEFAULTS_SET;
  const fill = await prefill(ctx.url, STREAM, entries, EVENT_MARKER);
  ctx.log(`defaults set: pre-filled ${fmtCount(entries)} entries (${fmtRate(fill)} pipelined XADD)`);
  const all = variants();
  const runs = new Map<string, Drained[]>(all.map((v) => [v.key, []]));
  for (let round = 1; round <= rounds; round++) {
    for (const v of all) {
      const run = await drain(ctx, v.child, `defaults-${v.key}-${round}`, entries, v.env, [], STREAM);
      runs.get(v.key)!.push(run);
      ctx.log(
        `defaults round ${round}: ${v.what}: ${fmtRate(run.perSecond)} (consumer CPU ${run.consumerCpuUs.toFixed(1)} µs/entry)`,
      );
    }
  }
  await ctx.redis.del(STREAM);
  const raw = runs.get('raw')!;
  const other = runs.get('other')!;
  return all.map((v) => {
    const mine = runs.get(v.key)!;
    const result = `${range(
      mine.map((r) => r.perSecond),
      fmtPlain,
    )} msgs/s`;
    const row = { row: '9', what: v.what, setting: `${v.setting}, ${rounds} rounds`, result };
    if (v.key === 'raw') return { ...row, ratio: fmtRatio(1), target: 'baseline' };
    const vsRaw = ratios(mine, raw);
    if (v.key === 'other') return { ...row, ratio: `${range(vsRaw, fmtRatio)} loop`, target: 'reference' };
    const vsOther = ratios(mine, other);
    const ratio = `${range(vsOther, fmtRatio)} other; ${range(vsRaw, fmtRatio)} loop`;
    if (v.key !== 'none') return { ...row, ratio, target: 'info' };
    const medianVsRaw = [...vsRaw].sort((a, b) => a - b)[Math.floor(vsRaw.length / 2)];
    const met = Math.min(...vsOther) >= otherRatio && medianVsRaw >= rawRatio;
    return { ...row, ratio, target: `≥ ${otherRatio}× other, median ≥ ${rawRatio}× loop`, met };
  });
}
