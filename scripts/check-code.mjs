#!/usr/bin/env node
// `npm run lint` (and the first step of `npm test`): the checks that keep the code's shape.
// - dependency-cruiser: no import cycles (type-only ones included) and imports pointing one way
//   (.dependency-cruiser.cjs says which);
// - no cycles between the library's top-level folders (scripts/check-folder-cycles.mjs);
// - oxlint with type information: correctness rules and the promise rules a transport lives by
//   (a floating promise is an ack or a retry that nobody waits for);
// - prettier: formatting, so diffs are about meaning;
// - the API reference: docs/api is what the TSDoc generates now (`npm run docs:api` regenerates it).
// The first three work with TypeScript 7; TypeDoc brings its own TypeScript 5 (scripts/api-docs).
import { spawnSync } from 'node:child_process';

const bin = (name) => `node_modules/.bin/${name}`;
const checks = [
  [
    'import shape',
    bin('depcruise'),
    ['libs/nest-redis-streams/src', '--config', '.dependency-cruiser.cjs', '--output-type', 'err'],
  ],
  ['folder cycles', process.execPath, ['scripts/check-folder-cycles.mjs']],
  [
    'lint',
    bin('oxlint'),
    ['--type-aware', '--tsconfig', 'tsconfig.json', '--deny-warnings', 'libs', 'apps', 'test', 'bench', 'scripts'],
  ],
  ['format', bin('prettier'), ['--check', '--log-level', 'warn', 'libs', 'apps', 'test', 'bench', 'scripts']],
  ['api reference', process.execPath, ['scripts/api-docs/generate.mjs', '--check']],
];
let failed = 0;
for (const [what, command, args] of checks) {
  const started = Date.now();
  const run = spawnSync(command, args, { stdio: 'inherit' });
  const ok = run.status === 0;
  console.log(
    `${ok ? 'ok  ' : 'FAIL'} ${what} (${Date.now() - started} ms)${ok ? '' : what === 'format' ? ': run `npm run format`' : ''}`,
  );
  if (!ok) failed++;
}
process.exit(failed === 0 ? 0 : 1);
