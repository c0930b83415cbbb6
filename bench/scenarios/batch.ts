// Row 11 (issue 15, items 2-3): batch handlers. A no-op batch handler against the hand-written
// loop (alternating rounds on fresh groups of one stream, best of each), and batches of 500 that
// each take a 2 ms "transaction", against what that 2 ms allows.
import { prefill } from '../support/prefill.js';
import { fmtCount, fmtRate, fmtRatio } from '../support/stats.js';
import type { ResultRow } from '../support/table.js';
import { DRAIN_ENTRIES, RAW_READ_COUNT } from '../settings.js';
import type { BenchContext } from './context.js';
import { type Drained, drain, profileArgs } from './drain.js';

const STREAM = 'bench:batch';
/** Issue 15: a no-op batch handler drains at ≥ 0.9× the hand-written loop. */
const TARGET = 0.9;
/** The loop reads 500 per XREADGROUP; batches of the same size compare like with like. */
const BATCH = { BATCH_SIZE: 500, BATCH_WAIT_MS: 20 };
const TX_MS = 2;
/** The transaction row reads fewer entries: 2 ms per 500 caps it near 250,000/s anyway. */
const TX_ENTRIES = 100_000;

export async function batchRows(ctx: BenchContext, rounds = 3): Promise<ResultRow[]> {
  await prefill(ctx.url, STREAM, DRAIN_ENTRIES);
  const runs: Record<'raw' | 'batch' | 'tx', Drained[]> = { raw: [], batch: [], tx: [] };
  for (let round = 1; round <= rounds; round++) {
    const raw = await drain(ctx, 'raw-consumer', `b-raw-${round}`, DRAIN_ENTRIES, { READ_COUNT: RAW_READ_COUNT }, [], STREAM);
    // --profile: a CPU profile of the first no-op batch drain, as of row 2's first drain.
    const batch = await drain(
      ctx,
      'batch-consumer',
      `b-noop-${round}`,
      DRAIN_ENTRIES,
      BATCH,
      round === 1 ? profileArgs(ctx) : [],
      STREAM,
    );
    const tx = await drain(ctx, 'batch-consumer', `b-tx-${round}`, TX_ENTRIES, { ...BATCH, TX_MS }, [], STREAM);
    for (const [name, d] of [
      ['raw loop', raw],
      ['batch handler, no-op', batch],
      [`batch handler, ${TX_MS} ms per batch`, tx],
    ] as const) {
      ctx.log(`batch round ${round}: ${name} ${fmtRate(d.perSecond)} (consumer CPU ${d.consumerCpuUs.toFixed(1)} µs/entry)`);
    }
    runs.raw.push(raw);
    runs.batch.push(batch);
    runs.tx.push(tx);
  }
  await ctx.redis.del(STREAM);
  const best = (key: keyof typeof runs) => Math.max(...runs[key].map((r) => r.perSecond));
  const cpu = (key: keyof typeof runs) => Math.min(...runs[key].map((r) => r.consumerCpuUs)).toFixed(1);
  const ratio = best('batch') / best('raw');
  const allowed = (BATCH.BATCH_SIZE * 1_000) / TX_MS;
  const setting = `batch { maxSize ${BATCH.BATCH_SIZE}, maxWaitMs ${BATCH.BATCH_WAIT_MS} }, other options default`;
  return [
    {
      row: '11',
      what: 'drain, no-op batch handler',
      setting: `${fmtCount(DRAIN_ENTRIES)} entries, ${setting}, best of ${rounds}`,
      result: fmtRate(best('batch')),
      ratio: `${fmtRatio(ratio)} of ${fmtRate(best('raw'))}`,
      target: `≥ ${TARGET}×`,
      met: ratio >= TARGET,
    },
    {
      row: '11',
      what: `drain, batch handler with a ${TX_MS} ms transaction per batch`,
      setting: `${fmtCount(TX_ENTRIES)} entries, ${setting}, best of ${rounds}`,
      result: fmtRate(best('tx')),
      ratio: `${fmtRatio(best('tx') / allowed)} of the ${fmtRate(allowed)} that ${TX_MS} ms per ${BATCH.BATCH_SIZE} allows; ${fmtRatio(best('tx') / best('raw'))} of the loop`,
      target: 'info',
    },
    {
      row: '11',
      what: 'consumer CPU per entry: loop / no-op batch / 2 ms batch',
      setting: `least of ${rounds} rounds`,
      result: `${cpu('raw')} / ${cpu('batch')} / ${cpu('tx')} µs`,
      ratio: '',
      target: 'info',
    },
  ];
}
