// Row 2d (issue 15, item 4; issue 29, item 1): row 2's drain as shipped, where the handler runs
// direct (nothing is bound to it), against the hand-written loop and the same consumer forced
// through Nest's per-message pipeline (`directHandlers: false`), alternating on fresh groups of
// one stream, so the ratio of the direct path to the pipeline is measured in the same rounds.
import { prefill } from '../support/prefill.js';
import { fmtCount, fmtRate, fmtRatio } from '../support/stats.js';
import type { ResultRow } from '../support/table.js';
import { DRAIN_ENTRIES, RAW_READ_COUNT, TARGETS, THROUGHPUT_SETTINGS } from '../settings.js';
import type { BenchContext } from './context.js';
import { type Drained, drain } from './drain.js';

const STREAM = 'bench:direct';
/** Row 2's target holds as shipped too (the direct path is the default). */
const TARGET = TARGETS.drainRatio;

export async function directRows(ctx: BenchContext, rounds = 3): Promise<ResultRow[]> {
  await prefill(ctx.url, STREAM, DRAIN_ENTRIES);
  const settings = { CONCURRENCY: THROUGHPUT_SETTINGS.concurrency, PREFETCH: THROUGHPUT_SETTINGS.prefetchCount };
  const runs: Record<'raw' | 'shipped' | 'pipeline', Drained[]> = { raw: [], shipped: [], pipeline: [] };
  for (let round = 1; round <= rounds; round++) {
    const raw = await drain(ctx, 'raw-consumer', `d-raw-${round}`, DRAIN_ENTRIES, { READ_COUNT: RAW_READ_COUNT }, [], STREAM);
    const shipped = await drain(ctx, 'transport-consumer', `d-shipped-${round}`, DRAIN_ENTRIES, settings, [], STREAM);
    const pipelineEnv = { ...settings, DIRECT_HANDLERS: 'false' };
    const pipeline = await drain(ctx, 'transport-consumer', `d-pipeline-${round}`, DRAIN_ENTRIES, pipelineEnv, [], STREAM);
    for (const [name, d] of [
      ['raw loop', raw],
      ['transport as shipped (direct handlers)', shipped],
      ['transport, directHandlers: false', pipeline],
    ] as const) {
      ctx.log(`direct round ${round}: ${name} ${fmtRate(d.perSecond)} (consumer CPU ${d.consumerCpuUs.toFixed(1)} µs/entry)`);
    }
    runs.raw.push(raw);
    runs.shipped.push(shipped);
    runs.pipeline.push(pipeline);
  }
  await ctx.redis.del(STREAM);
  const best = (key: keyof typeof runs) => Math.max(...runs[key].map((r) => r.perSecond));
  const cpu = (key: keyof typeof runs) => Math.min(...runs[key].map((r) => r.consumerCpuUs)).toFixed(1);
  const ratio = best('shipped') / best('raw');
  return [
    {
      row: '2d',
      what: 'drain, this transport as shipped (direct handlers), no-op handler',
      setting: `${fmtCount(DRAIN_ENTRIES)} entries, concurrency ${THROUGHPUT_SETTINGS.concurrency}, prefetchCount ${THROUGHPUT_SETTINGS.prefetchCount}, best of ${rounds}`,
      result: `${fmtRate(best('shipped'))} (directHandlers: false in these rounds: ${fmtRate(best('pipeline'))})`,
      ratio: `${fmtRatio(ratio)} of ${fmtRate(best('raw'))}; ${fmtRatio(best('shipped') / best('pipeline'))} of directHandlers: false`,
      target: `≥ ${TARGET}×`,
      met: ratio >= TARGET,
    },
    {
      row: '2d',
      what: 'consumer CPU per entry: loop / as shipped (direct) / directHandlers: false',
      setting: `least of ${rounds} rounds`,
      result: `${cpu('raw')} / ${cpu('shipped')} / ${cpu('pipeline')} µs`,
      ratio: '',
      target: 'info',
    },
  ];
}
