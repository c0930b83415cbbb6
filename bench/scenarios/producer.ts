// Row 5: `emit` throughput of RedisStreamsClient against pipelined XADD of the same entries.
import * as library from 'nest-redis-streams';
import { type Observable, lastValueFrom } from 'rxjs';
import { ioredisPipelineXadd, orderPlaced, prefill } from '../support/prefill.js';
import { fmtCount, fmtRate, fmtRatio, rate } from '../support/stats.js';
import type { ResultRow } from '../support/table.js';
import { PREFILL_BATCH, PRODUCER } from '../settings.js';
import type { BenchContext } from './context.js';

/** The part of the client this row uses; looked up at run time because the client is new. */
interface EmittingClient {
  connect(): Promise<unknown>;
  emit(pattern: string, data: unknown): Observable<string>;
  close(): Promise<void>;
}
type ClientClass = new (options: { connection: string }) => EmittingClient;

const STREAMS = { resp: 'bench:produce:resp', ioredis: 'bench:produce:ioredis', client: 'bench:produce:client' };

/** `PRODUCER.inFlight` callers, each emitting and awaiting one entry after another. */
async function emitAll(client: EmittingClient): Promise<number> {
  let next = 0;
  const caller = async () => {
    while (next < PRODUCER.entries) await lastValueFrom(client.emit(STREAMS.client, orderPlaced(next++)));
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: PRODUCER.inFlight }, caller));
  return rate(PRODUCER.entries, performance.now() - started);
}

export async function producerRows(ctx: BenchContext): Promise<ResultRow[]> {
  const entries = `${fmtCount(PRODUCER.entries)} envelope entries`;
  const resp = await prefill(ctx.url, STREAMS.resp, PRODUCER.entries);
  const pipelined = await ioredisPipelineXadd(ctx.redis, STREAMS.ioredis, PRODUCER.entries);
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
      setting: `${entries}, ${fmtCount(PREFILL_BATCH)} per pipeline`,
      result: fmtRate(pipelined),
      ratio: fmtRatio(1),
      target: 'baseline',
    },
  ];
  const Client = (library as Record<string, unknown>).RedisStreamsClient as ClientClass | undefined;
  const setting = `${entries}, ${PRODUCER.inFlight} callers awaiting one emit each`;
  if (!Client) {
    // PLACEHOLDER until RedisStreamsClient is in the built library: the row stays in the table.
    rows.push({
      row: '5',
      what: 'produce, RedisStreamsClient.emit',
      setting,
      result: 'pending: client not built',
      ratio: '-',
      target: 'info',
    });
  } else {
    const client = new Client({ connection: ctx.url });
    await client.connect();
    const emitted = await emitAll(client);
    await client.close();
    rows.push({
      row: '5',
      what: 'produce, RedisStreamsClient.emit',
      setting,
      result: fmtRate(emitted),
      ratio: fmtRatio(emitted / pipelined),
      target: 'info',
    });
  }
  ctx.log(`produce: ${rows.map((r) => `${r.what.replace('produce, ', '')} ${r.result}`).join(', ')}`);
  await ctx.redis.del(...Object.values(STREAMS));
  return rows;
}
