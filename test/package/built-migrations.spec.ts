import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const LIB = join(__dirname, '../../libs/nest-redis-streams');

// What an app does at start, in a fresh Node process loading one build: list the shipped
// migrations and apply them (to a database that records the statements: the files are what is checked).
const APP = `
const db = { transaction: (work) => work(null), executor: () => ({ query: async () => [], exec: async () => undefined }) };
const listed = lib.listMigrations().map((m) => m.name);
lib.applyMigrations(db).then(
  (applied) => process.stdout.write(JSON.stringify({ listed, applied })),
  (err) => { process.stderr.write(String(err)); process.exitCode = 1; },
);`;

function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, args, { cwd: LIB, timeout: 30_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr }),
    );
  });
}

describe('the built package finds its migrations/ folder', () => {
  beforeAll(() => {
    if (!existsSync(join(LIB, 'dist/cjs/index.js')))
      throw new Error('The library is not built: run node scripts/build-lib.mjs first (npm test does).');
  });

  // Every .sql file the package ships, in order (the folder `files` in package.json publishes).
  const shipped = readdirSync(join(LIB, 'migrations'))
    .filter((name) => name.endsWith('.sql'))
    .sort();
  const expected = { listed: shipped, applied: shipped };

  it('ships the inbox and outbox migrations', () => {
    expect(shipped.slice(0, 2)).toEqual(['001_inbox.sql', '002_outbox.sql']);
  });

  it('from the CommonJS build (require, dist/cjs/database)', async () => {
    const run_ = await run(['-e', `const lib = require('./dist/cjs/database/index.js');${APP}`]);
    expect(run_.stderr).toBe('');
    expect(JSON.parse(run_.stdout)).toEqual(expected);
  }, 60_000);

  it('from the ESM build (import, dist/database)', async () => {
    const run_ = await run(['--input-type=module', '-e', `const lib = await import('./dist/database/index.js');${APP}`]);
    expect(run_.stderr).toBe('');
    expect(JSON.parse(run_.stdout)).toEqual(expected);
  }, 60_000);
});
