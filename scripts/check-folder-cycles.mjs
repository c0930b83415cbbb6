#!/usr/bin/env node
// Folder cycles between the library's top-level folders (`client` -> `keys` is one edge, whatever
// file or subfolder makes it). dependency-cruiser's `scope: 'folder'` rule sees each subfolder as
// its own node and the files at src/ as one with all the rest; this check collapses every import
// to `<top folder> -> <top folder>` (the files at src/ as "(root)", the barrel src/index.ts left
// out: it exports every folder by design) and fails on any cycle, naming the imports that make it.
import { execFileSync } from 'node:child_process';

const SRC = 'libs/nest-redis-streams/src/';
const cruise = execFileSync(
  'node_modules/.bin/depcruise',
  [SRC, '--config', '.dependency-cruiser.cjs', '--output-type', 'json'],
  { maxBuffer: 512 * 1024 * 1024 },
);
/** The top-level folder of a library file; "(root)" for the files at src/, null outside the library. */
function folderOf(path) {
  if (!path.startsWith(SRC)) return null;
  const parts = path.slice(SRC.length).split('/');
  return parts.length === 1 ? '(root)' : parts[0];
}

/** folder -> folder -> the imports that make the edge */
const edges = new Map();
for (const module of JSON.parse(cruise.toString()).modules) {
  const from = folderOf(module.source);
  if (!from || module.source === `${SRC}index.ts` || module.source.endsWith('.spec.ts')) continue;
  if (!edges.has(from)) edges.set(from, new Map());
  for (const dependency of module.dependencies) {
    const to = folderOf(dependency.resolved);
    if (!to || to === from) continue;
    const why = edges.get(from).get(to) ?? [];
    why.push(`${module.source.slice(SRC.length)} -> ${dependency.resolved.slice(SRC.length)}`);
    edges.get(from).set(to, why);
  }
}

// Tarjan's strongly connected components: every component of more than one folder is a cycle.
let next = 0;
const index = new Map();
const low = new Map();
const stack = [];
const cycles = [];
function visit(folder) {
  index.set(folder, next);
  low.set(folder, next++);
  stack.push(folder);
  for (const to of edges.get(folder)?.keys() ?? []) {
    if (!index.has(to)) {
      visit(to);
      low.set(folder, Math.min(low.get(folder), low.get(to)));
    } else if (stack.includes(to)) low.set(folder, Math.min(low.get(folder), index.get(to)));
  }
  if (low.get(folder) !== index.get(folder)) return;
  const component = [];
  let member;
  do {
    member = stack.pop();
    component.push(member);
  } while (member !== folder);
  if (component.length > 1) cycles.push(component);
}
for (const folder of edges.keys()) if (!index.has(folder)) visit(folder);

for (const cycle of cycles) {
  console.error(`folder cycle: ${cycle.join(', ')}`);
  for (const from of cycle)
    for (const [to, why] of edges.get(from) ?? [])
      if (cycle.includes(to)) console.error(`  ${from} -> ${to}: ${why.join(' | ')}`);
}
process.exit(cycles.length === 0 ? 0 : 1);
