'use strict';
// Prints the chaos table (one row per scenario, written by each test as it ends) and saves it
// to reports/chaos-report.md, then stops the ledger Redis.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { redisServerBinary } = require('../../../scripts/lib/redis-process.cjs');

const COLUMNS = [
  ['#', (r) => `${r.n}${r.sub}`],
  ['scenario', (r) => r.scenario],
  ['size', (r) => r.size],
  ['produced', (r) => r.produced],
  ['processed', (r) => r.processed],
  ['lost', (r) => r.lost],
  ['duplicates', (r) => r.duplicates],
  ['dup. effects', (r) => r.dupEffects],
  ['dead-lettered', (r) => r.deadLettered],
  ['tombstoned', (r) => r.tombstoned],
  ['wall time', (r) => `${(r.wallMs / 1000).toFixed(1)} s`],
  ['result', (r) => (r.passed ? 'pass' : 'FAIL')],
  ['notes', (r) => r.notes],
];

function table(rows) {
  const cell = (v) => String(v ?? '').replace(/\|/g, '\\|');
  const lines = [`| ${COLUMNS.map(([h]) => h).join(' | ')} |`, `| ${COLUMNS.map(() => '---').join(' | ')} |`];
  for (const row of rows) lines.push(`| ${COLUMNS.map(([, get]) => cell(get(row))).join(' | ')} |`);
  return lines.join('\n');
}

module.exports = async function chaosGlobalTeardown(globalConfig, projectConfig) {
  const reports = path.join(projectConfig.rootDir, 'reports');
  const file = process.env.CHAOS_ROWS_FILE;
  const rows =
    file && fs.existsSync(file)
      ? fs
          .readFileSync(file, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l))
          .sort((a, b) => a.n - b.n || a.sub.localeCompare(b.sub))
      : [];
  if (rows.length > 0) {
    const seconds = ((Date.now() - globalThis.__CHAOS_STARTED__) / 1000).toFixed(1);
    const redis = spawnSync(redisServerBinary(), ['--version'], { encoding: 'utf8' }).stdout.trim();
    const report = [
      '# Chaos suite report',
      '',
      `Run ${new Date().toISOString()} on ${os.cpus().length} cores, Node ${process.version}, ${redis.split(' ').slice(0, 3).join(' ')}; ` +
        `seed ${process.env.CHAOS_SEED ?? '(random, printed per scenario)'}, scale ${process.env.CHAOS_SCALE ?? '1'}. ` +
        `Scenarios took ${seconds} s in all (Jest start-up and builds not included).`,
      '',
      'lost = produced events that were neither processed nor dead-lettered nor tombstoned (any loss fails the suite); ' +
        'duplicates = handler runs beyond the first for processed events; dup. effects = effects applied more than once.',
      '',
      table(rows),
      '',
    ].join('\n');
    fs.mkdirSync(reports, { recursive: true });
    fs.writeFileSync(path.join(reports, 'chaos-report.md'), report);
    console.log(`\n${report}\nWritten to reports/chaos-report.md`);
  }
  if (file) fs.rmSync(path.dirname(file), { recursive: true, force: true });
  await globalThis.__CHAOS_LEDGER__?.stop();
};
