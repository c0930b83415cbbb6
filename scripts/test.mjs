#!/usr/bin/env node
// `npm test`: makes sure redis-server exists (installing Debian's package when it may), then runs
// Jest. Jest's global setup starts a private redis-server unless REDIS_URL points at one.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { ensureRedisServer } = require('./lib/redis-process.cjs');

if (!process.env.REDIS_URL) {
  try {
    ensureRedisServer({ log: (m) => console.log(m) });
  } catch (err) {
    console.error(err.message);
    process.exit(1);
  }
}
// Recovery tests and the demo test run separate processes from compiled JavaScript.
const tsc = 'node_modules/typescript/bin/tsc';
for (const project of ['libs/nest-redis-streams/tsconfig.build.json', 'apps/orders-demo/tsconfig.app.json', 'test/workers/tsconfig.json']) {
  const built = spawnSync(process.execPath, [tsc, '-p', project], { stdio: 'inherit' });
  if (built.status !== 0) process.exit(built.status ?? 1);
}
const args = ['node_modules/jest/bin/jest.js', ...process.argv.slice(2)];
const result = spawnSync(process.execPath, args, { stdio: 'inherit' });
process.exit(result.status ?? 1);
