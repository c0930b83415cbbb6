// Row 8: what the transactional inbox costs. The same handler (one PostgreSQL transaction that
// inserts a charge) runs without and with Inbox.run, alternating on fresh groups of one stream.
// PostgreSQL is a private server (scripts/lib/postgres-process.cjs, fsync on), not the embedded
// PGlite: PGlite runs one transaction at a time inside the consumer's own process, so it would
// measure WebAssembly and a single connection instead of what a service pays against a server.
import { createRequire } from 'node:module';
import { Pool } from 'pg';
import { applyMigrations, pgDatabase } from 'nest-redis-streams/database';
import type { DoneMessage } from '../children/probe.js';
import { BenchChild } from '../support/bench-child.js';
import { prefill } from '../support/prefill.js';
import { assertDrained } from '../support/redis.js';
import { fmtCount, fmtRate, fmtRatio, rate } from '../support/stats.js';
import type { ResultRow } from '../support/table.js';
import type { BenchContext } from './context.js';

const require = createRequire(import.meta.url);
// Shared with the tests and the demo; from dist/bench/scenarios back to scripts/lib.
const { startPostgres } = require('../../../scripts/lib/postgres-process.cjs') as {
  startPostgres(): Promise<{ url: string; stop(): Promise<void> }>;
};

const STREAM = 'bench:inbox';

/**
 * Entries per run, rounds (each runs both variants; the best of each is kept), and the consumer's
 * settings: as many handlers at once as pool connections, so handlers wait on commits, not on the pool.
 */
export const INBOX_BENCH = { entries: 20_000, rounds: 3, concurrency: 32, prefetchCount: 500, poolSize: 32 };

const CHARGES_TABLE = `CREATE TABLE bench_charges (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  order_id text NOT NULL,
  amount_cents integer NOT NULL,
  event_id text NOT NULL
)`;

interface Drained {
  perSecond: number;
  consumerCpuUs: number;
}

export async function inboxRows(ctx: BenchContext): Promise<ResultRow[]> {
  let postgres: Awaited<ReturnType<typeof startPostgres>>;
  try {
    postgres = await startPostgres();
  } catch (err) {
    ctx.log(`row 8 skipped: ${(err as Error).message}`);
    return [
      { row: '8', what: 'inbox-protected handler', setting: '', result: 'skipped: no PostgreSQL', ratio: '', target: 'info' },
    ];
  }
  const pool = new Pool({ connectionString: postgres.url, max: 1 });
  pool.on('error', (err) => ctx.log(`inbox: set-up connection failed: ${err.message}`));
  try {
    await applyMigrations(pgDatabase(pool));
    await pool.query(CHARGES_TABLE);
    const fill = await prefill(ctx.url, STREAM, INBOX_BENCH.entries);
    ctx.log(`inbox: pre-filled ${fmtCount(INBOX_BENCH.entries)} entries (${fmtRate(fill)}), PostgreSQL at ${postgres.url}`);
    const plain: Drained[] = [];
    const inboxed: Drained[] = [];
    for (let round = 1; round <= INBOX_BENCH.rounds; round++) {
      const without = await drain(ctx, pool, postgres.url, `plain-${round}`, false);
      const withInbox = await drain(ctx, pool, postgres.url, `inbox-${round}`, true);
      ctx.log(`inbox round ${round}: without inbox ${describe(without)}, with inbox ${describe(withInbox)}`);
      plain.push(without);
      inboxed.push(withInbox);
    }
    const base = Math.max(...plain.map((d) => d.perSecond));
    const best = Math.max(...inboxed.map((d) => d.perSecond));
    const setting = `${fmtCount(INBOX_BENCH.entries)} entries, concurrency ${INBOX_BENCH.concurrency}, pool ${INBOX_BENCH.poolSize}, private PostgreSQL, best of ${INBOX_BENCH.rounds}`;
    return [
      {
        row: '8',
        what: 'handler writing a charge in a transaction, no inbox',
        setting,
        result: fmtRate(base),
        ratio: fmtRatio(1),
        target: 'baseline',
      },
      {
        row: '8',
        what: 'the same handler through Inbox.run',
        setting: 'as above; + nrs_inbox row in the same transaction',
        result: fmtRate(best),
        ratio: fmtRatio(best / base),
        target: 'info',
      },
    ];
  } finally {
    await pool.end();
    await postgres.stop();
    await ctx.redis.del(STREAM);
  }
}

/** One consumer child on a fresh group and empty tables; checks in PostgreSQL what it wrote. */
async function drain(ctx: BenchContext, pool: Pool, url: string, group: string, useInbox: boolean): Promise<Drained> {
  await pool.query('TRUNCATE bench_charges, nrs_inbox');
  const consumer = await BenchChild.start('inbox-consumer', {
    REDIS_URL: ctx.url,
    DATABASE_URL: url,
    STREAM,
    GROUP: group,
    EXPECT: INBOX_BENCH.entries,
    CONCURRENCY: INBOX_BENCH.concurrency,
    PREFETCH: INBOX_BENCH.prefetchCount,
    POOL_SIZE: INBOX_BENCH.poolSize,
    INBOX: useInbox ? 1 : 0,
  });
  try {
    const done = await consumer.next<DoneMessage>('done', 300_000);
    await assertDrained(ctx.redis, STREAM, group, INBOX_BENCH.entries);
    const { rows } = await pool.query<{ charges: string; inbox: string }>(
      'SELECT (SELECT count(*) FROM bench_charges) AS charges, (SELECT count(*) FROM nrs_inbox) AS inbox',
    );
    const expected = { charges: String(INBOX_BENCH.entries), inbox: useInbox ? String(INBOX_BENCH.entries) : '0' };
    if (rows[0].charges !== expected.charges || rows[0].inbox !== expected.inbox) {
      throw new Error(`Group ${group} wrote ${JSON.stringify(rows[0])}, expected ${JSON.stringify(expected)}.`);
    }
    return { perSecond: rate(done.count, done.elapsedMs), consumerCpuUs: (done.cpuMs * 1_000) / done.count };
  } finally {
    await consumer.stop();
  }
}

const describe = (d: Drained) => `${fmtRate(d.perSecond)} (consumer CPU ${d.consumerCpuUs.toFixed(1)} µs/entry)`;
