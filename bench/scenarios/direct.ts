// Row 2d (issue 15, item 4): row 2's drain with the opt-in fast path (`useDirectHandlers`)
// against the hand-written loop and row 2 itself, alternating on fresh groups of one stream.
import { prefill } from '../support/prefill.js';
import { fmtCount, fmtRate, fmtRatio } from '../support/stats.js';
import type { ResultRow } from '../support/table.js';
import { DRAIN_ENTRIES, RAW_READ_COUNT, THROUGHPUT_SETTINGS } from '../settings.js';
import type { BenchContext } from './context.js';
import { type Drained, drain } from './drain.js';

const STREAM = 'bench:direct';
/** Issue 15: the single-entry drain at ≥ 0.75× the hand-written loop. */
const TARGET = 0.75;

export async function directRows(ctx: BenchContext, rounds = 3): Promise<ResultRow[]> {
  await prefill(ctx.url, STREAM, DRAIN_ENTRIES);
  const settings = { CONCURRENCY: THROUGHPUT_SETTINGS.concurrency, PREFETCH: THROUGHPUT_SETTINGS.prefetchCount };
  const runs: Record<'raw' | 'nest' | 'direct', Drained[]> = { raw: [], nest: [], direct: [] };
  for (let round = 1; round <= rounds; round++) {
    const raw = await drain(ctx, 'raw-consumer', `d-raw-${round}`, DRAIN_ENTRIES, { READ_COUNT: RAW_READ_COUNT }, [], STREAM);
    const nest = await drain(ctx, 'transport-consumer', `d-nest-${round}`, DRAIN_ENTRIES, settings, [], STREAM);
    const direct = await drain(ctx, 'direct-consumer', `d-direct-${round}`, DRAIN_ENTRIES, settings, [], STREAM);
    for (const [name, d] of [
      ['raw loop', raw],
      ['transport', nest],
      ['transport, direct handlers', direct],
    ] as const) {
      ctx.log(`direct round ${round}: ${name} ${fmtRate(d.perSecond)} (consumer CPU ${d.consumerCpuUs.toFixed(1)} µs/entry)`);
    }
    runs.raw.push(raw);
    runs.nest.push(nest);
    runs.direct.push(direct);
  }
  await ctx.redis.del(STREAM);
  const best = (key: keyof typeof runs) => Math.max(...runs[key].map((r) => r.perSecond));
  const cpu = (key: keyof typeof runs) => Math.min(...runs[key].map((r) => r.consumerCpuUs)).toFixed(1);
  const ratio = best('direct') / best('raw');
  return [
    {
      row: '2d',
      what: 'drain, this transport, no-op handler, useDirectHandlers(app)',
      setting: `${fmtCount(DRAIN_ENTRIES)} entries, concurrency ${THROUGHPUT_SETTINGS.concurrency}, prefetchCount ${THROUGHPUT_SETTINGS.prefetchCount}, best of ${rounds}`,
      result: `${fmtRate(best('direct'))} (row 2 in these rounds: ${fmtRate(best('nest'))})`,
      ratio: `${fmtRatio(ratio)} of ${fmtRate(best('raw'))}; ${fmtRatio(best('direct') / best('nest'))} of row 2`,
      target: `≥ ${TARGET}×`,
      met: ratio >= TARGET,
    },
    {
      row: '2d',
      what: 'consumer CPU per entry: loop / row 2 / direct',
      setting: `least of ${rounds} rounds`,
      result: `${cpu('raw')} / ${cpu('nest')} / ${cpu('direct')} µs`,
      ratio: '',
      target: 'info',
    },
  ];
}
