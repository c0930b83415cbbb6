#!/usr/bin/env node
// `npm run test:nemesis -- --seeds N --budget-s S [--seed K]`: builds the library, the workers and
// the harness (test/nemesis), then runs it (docs/RELIABILITY.md, "The nemesis"). NEMESIS_NO_BUILD=1
// skips the build when `npm test` has just built the same.
import { spawnSync } from 'node:child_process';

const node = process.execPath;
const tsc = 'node_modules/typescript/bin/tsc';
const steps = [['scripts/build-lib.mjs'], [tsc, '-p', 'test/workers/tsconfig.json'], [tsc, '-p', 'test/nemesis/tsconfig.json']];
for (const step of process.env.NEMESIS_NO_BUILD === '1' ? steps.slice(2) : steps) {
  const built = spawnSync(node, step, { stdio: 'inherit' });
  if (built.status !== 0) process.exit(built.status ?? 1);
}
const run = spawnSync(node, ['dist/nemesis/nemesis/run.js', ...process.argv.slice(2)], { stdio: 'inherit' });
process.exit(run.status ?? 1);
