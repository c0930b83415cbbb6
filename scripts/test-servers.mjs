#!/usr/bin/env node
// `npm run test:servers`: the integration tier against each server of the matrix — Debian's
// redis-server from PATH (7.0 on bookworm), Redis 8.6 and Valkey 9.1 built from Debian's source
// packages (scripts/servers/build-servers.mjs, cached outside the repository) — and the chaos
// suite against the newest Redis. Every server the tests start is that server (NRS_REDIS_SERVER,
// read by scripts/lib/redis-process.cjs). Prints one line per run and writes
// reports/server-matrix.md; exits non-zero when any run failed.
//   --servers debian,redis,valkey   a subset (default: all three)
//   --no-chaos                      skip the chaos run
//   --parallel                      the integration runs at the same time (one Jest worker each;
//                                   each run's output is printed when it ends), then chaos alone
//   -- <jest args>                  passed to every Jest run (e.g. a spec path)
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const require = createRequire(import.meta.url);
const { ensureTestMachineOrExit } = require('./lib/test-packages.cjs');
const { SERVERS } = require('./lib/redis-servers.cjs');

const argv = process.argv.slice(2);
const dashes = argv.indexOf('--');
const own = dashes < 0 ? argv : argv.slice(0, dashes);
const jestExtra = dashes < 0 ? [] : argv.slice(dashes + 1);
const flag = (name) => {
  const i = own.indexOf(name);
  return i < 0 ? undefined : own[i + 1];
};
const chosen = (flag('--servers') ?? ['debian', ...SERVERS.map((s) => s.name)].join(',')).split(',');
const chaos = !own.includes('--no-chaos');
const parallel = own.includes('--parallel');

function must(result, what) {
  if (result.status !== 0) {
    console.error(`${what} failed (exit ${result.status}).`);
    process.exit(result.status ?? 1);
  }
  return result;
}

ensureTestMachineOrExit();

// The servers: `debian` is redis-server from PATH; the others are built (once per version).
const matrix = [];
if (chosen.includes('debian')) {
  const which = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).stdout.trim();
  matrix.push({ name: 'debian', bin: which });
}
const toBuild = SERVERS.filter((s) => chosen.includes(s.name));
if (toBuild.length) {
  const built = must(
    spawnSync(process.execPath, ['scripts/servers/build-servers.mjs', ...toBuild.map((s) => s.name)], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    }),
    'Building the servers',
  );
  for (const line of built.stdout.trim().split('\n')) {
    const [name, bin] = line.split(' ');
    matrix.push({ name, bin });
  }
}
for (const server of matrix) {
  const version = spawnSync(server.bin, ['--version'], { encoding: 'utf8' }).stdout;
  const [, product, v] = /^(\w+) server v=(\S+)/.exec(version) ?? [null, 'server', '?'];
  server.label = `${product} ${v}`;
}

// What runs in child processes (workers, CLI, demo) is compiled once for every run.
must(spawnSync(process.execPath, ['scripts/build-lib.mjs'], { stdio: 'inherit' }), 'Building the library');
for (const project of ['apps/orders-demo/tsconfig.app.json', 'test/workers/tsconfig.json']) {
  must(
    spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', project], { stdio: 'inherit' }),
    `tsc -p ${project}`,
  );
}

const newestRedis = matrix.find((s) => s.name === 'redis');
const runs = matrix.map((server) => ({ server, tier: 'integration', args: ['--selectProjects', 'integration'] }));
if (chaos && newestRedis) runs.push({ server: newestRedis, tier: 'chaos', args: ['--selectProjects', 'chaos', '--runInBand'] });

const work = mkdtempSync(join(tmpdir(), 'nrs-matrix-'));

/** One Jest run against one server; resolves with its exit status. */
function jestRun(run, out, log) {
  // REDIS_URL unset: the global setup starts its own server, from NRS_REDIS_SERVER.
  const env = { ...process.env, NRS_REDIS_SERVER: run.server.bin };
  delete env.REDIS_URL;
  const args = ['node_modules/jest/bin/jest.js', ...jestExtra, ...run.args, '--forceExit', '--json', `--outputFile=${out}`];
  // Side by side, each run gets one worker (the chaos run is alone and in band anyway), and its
  // output goes to a file printed whole when it ends: interleaved lines of two runs cannot be read.
  if (log) args.push('--maxWorkers=1');
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { stdio: log ? ['ignore', 'pipe', 'pipe'] : 'inherit', env });
    if (log) {
      const file = createWriteStream(log);
      child.stdout.pipe(file);
      child.stderr.pipe(file);
    }
    child.on('close', (status) => resolve(status));
  });
}

function summarize(run, out, status, seconds) {
  let passed = 0;
  let failed = 0;
  const failures = [];
  try {
    const report = JSON.parse(readFileSync(out, 'utf8'));
    passed = report.numPassedTests;
    failed = report.numFailedTests + report.numRuntimeErrorTestSuites;
    for (const suite of report.testResults) {
      for (const t of suite.assertionResults) if (t.status === 'failed') failures.push(t.fullName);
      if (suite.status === 'failed' && suite.assertionResults.length === 0)
        failures.push(`${suite.name}: ${suite.message.split('\n')[0]}`);
    }
  } catch {
    failed = Math.max(failed, 1);
    failures.push(`jest exited ${status} without a report`);
  }
  if (status !== 0 && failed === 0) failed = 1;
  return { server: run.server.label, tier: run.tier, passed, failed, seconds, failures };
}

async function execute(run, together) {
  const out = join(work, `${run.server.name}-${run.tier}.json`);
  const log = together ? join(work, `${run.server.name}-${run.tier}.log`) : null;
  if (!together) console.log(`\n=== ${run.tier} tier on ${run.server.label} (${run.server.bin})`);
  const started = Date.now();
  const status = await jestRun(run, out, log);
  const seconds = (Date.now() - started) / 1000;
  if (log) {
    console.log(`\n=== ${run.tier} tier on ${run.server.label} (${run.server.bin}), run beside the others`);
    process.stdout.write(readFileSync(log, 'utf8'));
  }
  return summarize(run, out, status, seconds);
}

const rows = [];
const integration = runs.filter((r) => r.tier === 'integration');
if (parallel && integration.length > 1) {
  rows.push(...(await Promise.all(integration.map((run) => execute(run, true)))));
  for (const run of runs.filter((r) => r.tier !== 'integration')) rows.push(await execute(run, false));
} else {
  for (const run of runs) rows.push(await execute(run, false));
}
rmSync(work, { recursive: true, force: true });

const line = (r) =>
  `${r.server.padEnd(14)} ${r.tier.padEnd(12)} passed ${String(r.passed).padStart(4)}  failed ${String(r.failed).padStart(3)}  ${r.seconds.toFixed(0).padStart(5)} s`;
console.log('\nServer matrix:');
for (const r of rows) {
  console.log(line(r));
  for (const f of r.failures) console.log(`    failed: ${f}`);
}
const table = [
  '# Server matrix',
  '',
  `Run ${new Date().toISOString()} (npm run test:servers).`,
  '',
  '| server | tier | passed | failed | duration |',
  '| --- | --- | --- | --- | --- |',
  ...rows.map((r) => `| ${r.server} | ${r.tier} | ${r.passed} | ${r.failed} | ${r.seconds.toFixed(0)} s |`),
  '',
  ...rows.flatMap((r) => r.failures.map((f) => `- ${r.server} ${r.tier}: ${f}`)),
  '',
].join('\n');
mkdirSync('reports', { recursive: true });
writeFileSync('reports/server-matrix.md', table);
process.exit(rows.some((r) => r.failed > 0) ? 1 : 0);
