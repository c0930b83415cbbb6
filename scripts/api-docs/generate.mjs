#!/usr/bin/env node
// The API reference in docs/api, generated from the library's TSDoc by TypeDoc with its Markdown
// plugin. `npm run docs:api` regenerates it; `--check` (run by scripts/check-code.mjs, so by
// `npm test` and `npm run lint`) fails when the checked-in reference is not what the sources
// generate now. TypeDoc needs TypeScript 5's compiler API, which the repository's TypeScript 7 does
// not have, so it lives in this folder with its own TypeScript, installed on first use.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '../..');
const reference = join(root, 'docs/api');
const check = process.argv.includes('--check');

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { stdio: 'inherit', ...options });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

/** Every file below `dir`, relative to it, sorted. */
function files(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)))
    .sort();
}

if (!existsSync(join(here, 'node_modules/typedoc'))) {
  // A clean clone (CI): the root `npm ci` does not install this folder's tools.
  run('npm', ['ci', '--prefix', here, '--no-audit', '--no-fund', '--loglevel', 'error']);
}
const generated = mkdtempSync(join(tmpdir(), 'nrs-api-'));
try {
  run(
    process.execPath,
    [
      join(here, 'node_modules/typedoc/bin/typedoc'),
      '--options',
      join(here, 'typedoc.json'),
      '--out',
      generated,
      '--logLevel',
      'Error',
    ],
    { cwd: here },
  );
  if (check) {
    const now = files(generated);
    const checkedIn = files(reference);
    const problems = [
      ...now.filter((file) => !checkedIn.includes(file)).map((file) => `docs/api/${file} is missing`),
      ...checkedIn.filter((file) => !now.includes(file)).map((file) => `docs/api/${file} documents nothing the sources export`),
      ...now
        .filter((file) => checkedIn.includes(file))
        .filter((file) => readFileSync(join(generated, file), 'utf8') !== readFileSync(join(reference, file), 'utf8'))
        .map((file) => `docs/api/${file} differs from what the TSDoc generates`),
    ];
    if (problems.length > 0) {
      console.error(`The API reference is not what the sources generate now:\n  ${problems.slice(0, 20).join('\n  ')}`);
      if (problems.length > 20) console.error(`  ... and ${problems.length - 20} more`);
      console.error('Run `npm run docs:api` and commit docs/api.');
      process.exit(1);
    }
  } else {
    rmSync(reference, { recursive: true, force: true });
    cpSync(generated, reference, { recursive: true });
    console.log(`docs/api: ${files(reference).length} files generated from the TSDoc.`);
  }
} finally {
  rmSync(generated, { recursive: true, force: true });
}
