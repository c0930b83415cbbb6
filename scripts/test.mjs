#!/usr/bin/env node
// `npm test`: makes sure redis-server, postgresql, chromium and promtool exist (installing Debian's
// packages when it may), builds what runs in child processes, then runs Jest. Its global setup
// starts a private redis-server unless REDIS_URL points at one.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { ensureTestMachineOrExit } = require('./lib/test-packages.cjs');

// Even with REDIS_URL set, recovery, cluster and chaos tests start redis-servers of their own.
ensureTestMachineOrExit();
// The full run starts with the code-shape checks (import cycles and direction, lint, format).
if (process.argv.length <= 2) {
  const checked = spawnSync(process.execPath, ['scripts/check-code.mjs'], { stdio: 'inherit' });
  if (checked.status !== 0) process.exit(checked.status ?? 1);
}
// Recovery tests and the demo test run separate processes from compiled JavaScript; the package
// test installs the library's tarball, both module formats.
const library = spawnSync(process.execPath, ['scripts/build-lib.mjs'], { stdio: 'inherit' });
if (library.status !== 0) process.exit(library.status ?? 1);
const tsc = 'node_modules/typescript/bin/tsc';
for (const project of ['apps/orders-demo/tsconfig.app.json', 'test/workers/tsconfig.json']) {
  const built = spawnSync(process.execPath, [tsc, '-p', project], { stdio: 'inherit' });
  if (built.status !== 0) process.exit(built.status ?? 1);
}
// Without arguments: unit and integration specs first, then the chaos suite on its own, one
// scenario at a time (its scenarios load both cores and must not compete with other tests).
const runs =
  process.argv.length > 2
    ? [process.argv.slice(2)]
    : [
        ['--selectProjects', 'unit', 'integration'],
        ['--selectProjects', 'chaos', '--runInBand'],
      ];
for (const args of runs) {
  // --forceExit: every suite closes what it opened, but a failing suite may leave a connection
  // behind, and CI must then fail at once instead of waiting for it until its time runs out.
  const result = spawnSync(process.execPath, ['node_modules/jest/bin/jest.js', '--forceExit', ...args], { stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}
