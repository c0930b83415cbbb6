#!/usr/bin/env node
// `npm run bench`: builds the library and the benchmark (children are separate processes that run
// compiled JavaScript), then runs dist/bench/main.js with the same arguments.
// `--no-build` reuses what is already compiled.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// Paths below are relative to the repository root, wherever the script is started from.
process.chdir(fileURLToPath(new URL('..', import.meta.url)));

const args = process.argv.slice(2);
const tsc = 'node_modules/typescript/bin/tsc';
if (!args.includes('--no-build')) {
  for (const project of ['libs/nest-redis-streams/tsconfig.build.json', 'bench/tsconfig.json']) {
    const built = spawnSync(process.execPath, [tsc, '-p', project], { stdio: 'inherit' });
    if (built.status !== 0) {
      console.error(`Building ${project} failed; the benchmark needs a library that compiles.`);
      process.exit(built.status ?? 1);
    }
  }
}
const run = spawnSync(process.execPath, ['dist/bench/main.js', ...args.filter((a) => a !== '--no-build')], { stdio: 'inherit' });
process.exit(run.status ?? 1);
