import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const LIB = join(__dirname, '../../libs/nest-redis-streams');
const ENTRY_POINTS = ['nest-redis-streams', 'nest-redis-streams/console', 'nest-redis-streams/database'];

// Each entry point resolved by name through package.json `exports`, in a fresh Node process started
// in the package's folder (a package can import itself by name), as an installed app resolves it.
function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, args, { cwd: LIB, timeout: 30_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr }),
    );
  });
}

/** The runtime names each entry point exports, as `require` (CommonJS) or `import` (ESM) loads them. */
async function namesPerEntry(format: 'require' | 'import'): Promise<Record<string, string[]>> {
  const load = format === 'require' ? (name: string) => `require('${name}')` : (name: string) => `await import('${name}')`;
  const script = `const out = {};
${ENTRY_POINTS.map((name) => `out['${name}'] = Object.keys(${load(name)}).sort();`).join('\n')}
process.stdout.write(JSON.stringify(out));`;
  const args = format === 'require' ? ['-e', script] : ['--input-type=module', '-e', script];
  const result = await run(args);
  expect(result.stderr).toBe('');
  return JSON.parse(result.stdout);
}

describe('the built package has one entry point per capability', () => {
  beforeAll(() => {
    if (!existsSync(join(LIB, 'dist/cjs/console/index.js')))
      throw new Error('The library is not built: run node scripts/build-lib.mjs first (npm test does).');
  });

  it('maps every entry point to ESM, CommonJS and types that exist', () => {
    const { exports } = JSON.parse(readFileSync(join(LIB, 'package.json'), 'utf8'));
    for (const subpath of ['.', './console', './database']) {
      const targets = [
        exports[subpath].import.types,
        exports[subpath].import.default,
        exports[subpath].require.types,
        exports[subpath].require.default,
      ];
      expect(targets.filter((target: string) => !existsSync(join(LIB, target)))).toEqual([]);
    }
  });

  it('exports the same names from the CommonJS and the ESM build, each name from one entry point', async () => {
    const [cjs, esm] = await Promise.all([namesPerEntry('require'), namesPerEntry('import')]);
    expect(esm).toEqual(cjs);
    expect(cjs['nest-redis-streams/console']).toContain('RedisStreamsConsoleModule');
    expect(cjs['nest-redis-streams/database']).toEqual(
      expect.arrayContaining(['Inbox', 'Outbox', 'reconcile', 'listMigrations']),
    );
    const all = Object.values(cjs).flat();
    expect(all.length).toBe(new Set(all).size);
  }, 60_000);

  it('loads neither the console nor the database code for an app that imports the root only', async () => {
    const script = `require('nest-redis-streams');
process.stdout.write(JSON.stringify(Object.keys(require.cache).filter((file) => /[\\\\/]dist[\\\\/]cjs[\\\\/](console|database)[\\\\/]/.test(file))));`;
    const result = await run(['-e', script]);
    expect(result.stderr).toBe('');
    expect(JSON.parse(result.stdout)).toEqual([]);
  }, 60_000);
});
