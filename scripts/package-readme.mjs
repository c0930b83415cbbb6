#!/usr/bin/env node
// Runs as the library's `prepack`: the package's README is the repository README (one text to
// keep true; its snippets are tested), with links into the repository (the guides in docs/, which
// the package does not ship) made absolute so they work on the registry's page.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import links from './lib/package-readme-links.cjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const lib = join(root, 'libs/nest-redis-streams');
const { repository } = JSON.parse(readFileSync(join(lib, 'package.json'), 'utf8'));
writeFileSync(join(lib, 'README.md'), links.absoluteLinks(readFileSync(join(root, 'README.md'), 'utf8'), repository.url));
