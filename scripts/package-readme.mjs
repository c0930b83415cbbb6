#!/usr/bin/env node
// Runs as the library's `prepack`: the package's README is the repository README (one text to
// keep true; its snippets are tested), with links into the repository made absolute so they work
// on the registry's page.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const lib = join(root, 'libs/nest-redis-streams');
const { repository } = JSON.parse(readFileSync(join(lib, 'package.json'), 'utf8'));
const base = repository.url.replace(/^git\+/, '').replace(/\.git$/, '');
const readme = readFileSync(join(root, 'README.md'), 'utf8').replace(
  /\]\((?!https?:|#|mailto:)([^)\s]+)\)/g,
  (_, path) => `](${base}/blob/main/${path.replace(/^\.\//, '')})`,
);
writeFileSync(join(lib, 'README.md'), readme);
