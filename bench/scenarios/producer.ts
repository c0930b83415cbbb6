// Row 5: `emit` and `emitBatch` throughput of RedisStreamsClient against pipelined XADD of the same
// entries. The three are measured in alternating rounds, so a burst of load on the machine hits
// them alike; each row shows its median round and the median of its per-round ratios.
import type { Redis } from 'ioredis';
import { RedisStreamsClient } from 'nest-redis-streams';
import { lastValueFrom } from 'rxjs';
import { ioredisPipelineXadd, orderPlaced, prefill } from '../support/prefill.js';
import { fmtCount, fmtRate, fmtRatio, rate } from '../support/stats.js';
import type { ResultRow } from '../support/table.js';
import { PREFILL_BATCH, PRODUCER } from '../settings.js';
import type { BenchContext } from './context.js';

/** Issue 15's targets, as ratios to the ioredis pipeline of the same round. */
const TARGETS = { emit: 0.75, emitBatch: 0.9 };
/** Rounds of the three measurements; odd, so the median is one of them. */
const ROUNDS = 3;

const STREAMS = { resp: 'bench:produce:resp', ioredis: 'bench:produce:ioredis', client: 'bench:produce:client' };

/** `PRODUCER.inFlight` callers, each emitting and awaiting one entry after another. */
async function emitAll(client: RedisStreamsClient): Promise<number> {
  let next = 0;
  const caller = async () => {
    while (next < PRODUCER.entries) await lastValueFrom(client.emit(STREAMS.client, orderPlaced(next++)));
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: PRODUCER.inFlight }, caller));
  return rate(PRODUCER.entries, performance.now() - started);
}

/** `emitBatch` of PREFILL_BATCH entries with two batches in flight: the pipeline's own pacing. */
async function emitBatches(client: RedisStreamsClient): Promise<number> {
  const started = performance.now();
  let inFlight: Promise<unknown> = Promise.resolve();
  for (let from = 0; from < PRODUCER.entries; from += PREFILL_BATCH) {
    const payloads = Array.from({ length: Math.min(PREFILL_BATCH, PRODUCER.entries - from) }, (_, i) => orderPlaced(from + i));
    const sent = lastValueFrom(client.emitBatch(STREAMS.client, payloads));
    await inFlight;
    inFlight = sent;
  }
  await inFlight;
  return rate(PRODUCER.entries, performance.now() - started);
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1];

/**
 * Runs a measurement and adds this process' CPU per entry to `cpu`: the producer's own cost,
 * which other load on the machine disturbs far less than the rate.
 */
async function withCpu(cpu: number[], measure: () => Promise<number>): Promise<number> {
  const before = process.cpuUsage();
  const perSecond = await measure();
  const used = process.cpuUsage(before);
  cpu.push((used.user + used.system) / PRODUCER.entries);
  return perSecond;
}

interface Rounds {
  pipelined: number[];
  emit: number[];
  emitBatch: number[];
  /** Microseconds of this process' CPU per entry, per round. */
  cpu: { pipelined: number[]; emit: number[]; emitBatch: number[] };
}

async function measureRounds(ctx: BenchContext, redis: Redis): Promise<Rounds> {
  const client = new RedisStreamsClient({ connection: ctx.url });
  await client.connect();
  const rounds: Rounds = { pipelined: [], emit: [], emitBatch: [], cpu: { pipelined: [], emit: [], emitBatch: [] } };
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      const { cpu } = rounds;
      rounds.pipelined.push(await withCpu(cpu.pipelined, () => ioredisPipelineXadd(redis, STREAMS.ioredis, PRODUCER.entries)));
      rounds.emit.push(await withCpu(cpu.emit, () => emitAll(client)));
      rounds.emitBatch.push(await withCpu(cpu.emitBatch, () => emitBatches(client)));
      const at = (r: number[]) => r[round - 1];
      const [p, e, b] = [rounds.pipelined, rounds.emit, rounds.emitBatch].map(at);
      const [cp, ce, cb] = [cpu.pipelined, cpu.emit, cpu.emitBatch].map((r) => at(r).toFixed(1));
      ctx.log(
        `produce round ${round}: pipeline ${fmtRate(p)}, emit ${fmtRate(e)} (${fmtRatio(e / p)}), emitBatch ${fmtRate(b)} ` +
          `(${fmtRatio(b / p)}); CPU per entry ${cp} / ${ce} / ${cb} µs`,
      );
      // Streams growing round after round would make later rounds measure a bigger Redis.
      await redis.del(STREAMS.ioredis, STREAMS.client);
    }
  } finally {
    await client.close();
  }
  return rounds;
}

export async function producerRows(ctx: BenchContext): Promise<ResultRow[]> {
  const entries = `${fmtCount(PRODUCER.entries)} envelope entries`;
  const resp = await prefill(ctx.url, STREAMS.resp, PRODUCER.entries);
  const rounds = await measureRounds(ctx, ctx.redis);
  const pipelined = median(rounds.pipelined);
  const ratioTo = (rates: number[]) => median(rates.map((r, i) => r / rounds.pipelined[i]));
  const emitRatio = ratioTo(rounds.emit);
  const batchRatio = ratioTo(rounds.emitBatch);
  const rows: ResultRow[] = [
    {
      row: '5',
      what: 'produce, pipelined XADD as raw RESP (limit)',
      setting: `${entries}, ${fmtCount(PREFILL_BATCH)} per write`,
      result: fmtRate(resp),
      ratio: fmtRatio(resp / pipelined),
      target: 'info',
    },
    {
      row: '5',
      what: 'produce, ioredis pipelined XADD',
      setting: `${entries}, ${fmtCount(PREFILL_BATCH)} per pipeline, 2 in flight; median of ${ROUNDS} rounds`,
      result: fmtRate(pipelined),
      ratio: fmtRatio(1),
      target: 'baseline',
    },
    {
      row: '5',
      what: 'produce, RedisStreamsClient.emit',
      setting: `${entries}, ${PRODUCER.inFlight} callers awaiting one emit each`,
      result: fmtRate(median(rounds.emit)),
      ratio: fmtRatio(emitRatio),
      target: `≥ ${fmtRatio(TARGETS.emit)}`,
      met: emitRatio >= TARGETS.emit,
    },
    {
      row: '5',
      what: 'produce, RedisStreamsClient.emitBatch',
      setting: `${entries}, ${fmtCount(PREFILL_BATCH)} per emitBatch, 2 in flight`,
      result: fmtRate(median(rounds.emitBatch)),
      ratio: fmtRatio(batchRatio),
      target: `≥ ${fmtRatio(TARGETS.emitBatch)}`,
      met: batchRatio >= TARGETS.emitBatch,
    },
  ];
  ctx.log(`produce: ${rows.map((r) => `${r.what.replace('produce, ', '')} ${r.result}`).join(', ')}`);
  const { cpu } = rounds;
  ctx.log(
    `produce, median CPU per entry of this process: pipeline ${median(cpu.pipelined).toFixed(1)} µs, ` +
      `emit ${median(cpu.emit).toFixed(1)} µs, emitBatch ${median(cpu.emitBatch).toFixed(1)} µs`,
  );
  await ctx.redis.del(...Object.values(STREAMS));
  return rows;
}
