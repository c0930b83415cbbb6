#!/usr/bin/env node
// Builds the library in both module formats:
//   dist/       ESM (tsc: JavaScript and declarations), what `import` gets;
//   dist/cjs/   CommonJS, what `require` gets (Nest 11 apps as `nest new` makes them, ts-jest,
//               Node before 20.19 that cannot require() ESM). It is swc's CommonJS transform of
//               the ESM output, so decorator metadata emitted by tsc is kept as it is, with the
//               same declarations beside it (a package.json there says "commonjs", so TypeScript
//               reads them as CommonJS types).
// import.meta does not exist in CommonJS: its few uses (createRequire for optional peers) get
// the file's own URL from __filename instead; the build fails if any other use appears.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';

const require = createRequire(import.meta.url);
const { transformSync } = require('@swc/core');

const lib = 'libs/nest-redis-streams';
const dist = join(lib, 'dist');
const cjs = join(dist, 'cjs');

rmSync(dist, { recursive: true, force: true });
const tsc = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', join(lib, 'tsconfig.build.json')], {
  stdio: 'inherit',
});
if (tsc.status !== 0) process.exit(tsc.status ?? 1);

const IMPORT_META_URL = /\bimport\.meta\.url\b/g;
const OWN_URL = "require('node:url').pathToFileURL(__filename).href";
let files = 0;
for (const file of walk(dist)) {
  const target = join(cjs, relative(dist, file));
  mkdirSync(dirname(target), { recursive: true });
  if (file.endsWith('.d.ts')) {
    cpSync(file, target);
    continue;
  }
  if (!file.endsWith('.js')) continue;
  const source = readFileSync(file, 'utf8').replace(IMPORT_META_URL, OWN_URL);
  if (/\bimport\.meta\b/.test(source))
    throw new Error(`${file} uses import.meta beyond import.meta.url; teach scripts/build-lib.mjs its CommonJS form.`);
  const { code } = transformSync(source, {
    filename: file,
    sourceMaps: false,
    module: { type: 'commonjs', strict: true, importInterop: 'node' },
    jsc: { target: 'es2022', parser: { syntax: 'ecmascript' } },
  });
  writeFileSync(target, code);
  files++;
}
writeFileSync(join(cjs, 'package.json'), `${JSON.stringify({ type: 'commonjs' }, null, 2)}\n`);
console.log(`built ${lib}: ESM in dist/, ${files} CommonJS files in dist/cjs/`);

function* walk(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (path !== cjs) yield* walk(path);
    } else yield path;
  }
}
