// `npm run bench`: every row measured in this run against a private redis-server, printed as a
// table and written to bench/results.md. bench/run.mjs builds the library and this folder first.
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import type { BenchContext } from './scenarios/context.js';
import { batchRows } from './scenarios/batch.js';
import { clientLibraryRows } from './scenarios/client-library.js';
import { defaultsRows } from './scenarios/defaults.js';
import { directRows } from './scenarios/direct.js';
import { drainRows, sleepRows } from './scenarios/drain.js';
import { inboxRows } from './scenarios/inbox.js';
import { latencyRows } from './scenarios/latency.js';
import { clusterRows } from './scenarios/cluster.js';
import { memoryRows } from './scenarios/memory.js';
import { producerRows } from './scenarios/producer.js';
import { redisVersion, startPrivateRedis } from './support/redis.js';
import { type ResultRow, renderTable } from './support/table.js';

const RESULTS = fileURLToPath(new URL('../../bench/results.md', import.meta.url));
const PROFILES = fileURLToPath(new URL('./profiles/', import.meta.url));

/**
 * `--only=drain,latency` runs a subset (while working on one row); the default runs them all.
 * `--only=defaults` runs only row 9, the defaults set, which `drain` includes. `--only=ioredis`
 * runs row 10, the drain and latency rows on each installed ioredis.
 * `--only=direct` runs only row 2d (as shipped, with direct handlers, against `directHandlers: false` and the loop), which `drain` includes.
 * `--only=batch` runs row 11, batch handlers against the loop.
 */
const SECTIONS = ['drain', 'direct', 'batch', 'latency', 'producer', 'memory', 'cluster', 'inbox', 'ioredis'] as const;

function parseArgs(argv: string[]) {
  const only = argv
    .find((a) => a.startsWith('--only='))
    ?.slice('--only='.length)
    .split(',');
  return { profile: argv.includes('--profile'), sections: new Set(only ?? SECTIONS) };
}

function describeMachine(redis: string): string {
  const model = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? cpus()[0]?.model;
  return `${cpus().length} CPUs (${model}), Node ${process.version}, Redis ${redis}`;
}

async function main(): Promise<void> {
  const started = performance.now();
  const args = parseArgs(process.argv.slice(2));
  const server = await startPrivateRedis();
  const redis = new Redis(server.url);
  // The log (every round, CPU per entry, pre-fill rates) goes into results.md under the table.
  const log: string[] = [];
  const ctx: BenchContext = {
    url: server.url,
    redis,
    profileDir: args.profile ? PROFILES : null,
    log: (message) => {
      const line = `${((performance.now() - started) / 1_000).toFixed(0).padStart(3)} s  ${message}`;
      log.push(line);
      console.log(`  ${line}`);
    },
  };
  const machine = describeMachine(await redisVersion(redis));
  console.log(`Benchmark on ${machine}; private redis-server at ${server.url}`);
  const rows: ResultRow[] = [];
  try {
    let limit = 0;
    if (args.sections.has('drain')) {
      const drained = await drainRows(ctx);
      limit = drained.limit;
      rows.push(...drained.rows, ...(await sleepRows(ctx, limit)));
    }
    if (args.sections.has('drain') || args.sections.has('direct')) rows.push(...(await directRows(ctx)));
    if (args.sections.has('drain') || args.sections.has('defaults')) rows.push(...(await defaultsRows(ctx)));
    if (args.sections.has('batch')) rows.push(...(await batchRows(ctx)));
    if (args.sections.has('latency')) rows.push(...(await latencyRows(ctx)));
    if (args.sections.has('producer')) rows.push(...(await producerRows(ctx)));
    if (args.sections.has('memory')) rows.push(...(await memoryRows(ctx)));
    if (args.sections.has('cluster')) rows.push(...(await clusterRows(ctx)));
    if (args.sections.has('inbox')) rows.push(...(await inboxRows(ctx)));
    if (args.sections.has('ioredis')) rows.push(...(await clientLibraryRows(ctx)));
  } finally {
    await redis.quit();
    await server.stop();
  }
  const seconds = (performance.now() - started) / 1_000;
  const table = renderTable(rows);
  console.log(`\n${table}\n\nTotal ${seconds.toFixed(0)} s.${args.profile ? ` CPU profiles in ${PROFILES}` : ''}`);
  // results.md is the record of a whole run; a partial one (--only) must not replace it.
  if (args.sections.size < SECTIONS.length) return;
  const when = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const header = `# Benchmark results\n\n${when}, ${machine}, ${seconds.toFixed(0)} s. See BENCHMARKS.md for the method.`;
  writeFileSync(RESULTS, `${header}\n\n${table}\n\n## Run log\n\n\`\`\`\n${log.join('\n')}\n\`\`\`\n`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
