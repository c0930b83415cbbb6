// Summarises a .cpuprofile written by `npm run bench -- --profile`: self time by function and by
// package, and inclusive time of the functions named on the command line.
//   node dist/bench/tools/profile-top.js <file.cpuprofile> [--from=functionName] [functionName ...]
// --from drops the samples before that function first ran (start-up: module loading, connects).
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, ...rest] = process.argv.slice(2);
const from = rest.find((a) => a.startsWith('--from='))?.slice('--from='.length);
const watched = rest.filter((a) => !a.startsWith('--'));
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parentOf = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);

/** True when a frame named `name` is on the stack of sample node `id`. */
function onStack(id: number, name: string): boolean {
  for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
    if (byId.get(at)!.callFrame.functionName === name) return true;
  }
  return false;
}

const firstSample =
  from === undefined
    ? 0
    : Math.max(
        0,
        profile.samples.findIndex((id) => onStack(id, from)),
      );
const selfUs = new Map<number, number>();
profile.samples.forEach((id, i) => {
  if (i >= firstSample) selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
});
const totalUs = [...selfUs.values()].reduce((a, b) => a + b, 0);

function place(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const short = url
    .replace(/^.*node_modules\//, '')
    .replace(/^.*\/libs\/nest-redis-streams\/dist\//, 'lib/')
    .replace(/^file:\/\//, '');
  return `${functionName || '(anonymous)'} ${short}:${lineNumber + 1}`;
}

/** Which package a frame belongs to: the library, a dependency, Node itself or V8 (GC, idle). */
function packageOf(node: ProfileNode): string {
  const { url, functionName } = node.callFrame;
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  if (url.includes('/libs/nest-redis-streams/')) return 'nest-redis-streams';
  const dep = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (dep) return dep[1];
  if (url.startsWith('node:')) return 'node core';
  return url.includes('/dist/bench/') ? 'bench' : 'other';
}

function top(weights: Map<string, number>, count: number): string[] {
  return [...weights.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([key, us]) => `${((100 * us) / totalUs).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms  ${key}`);
}

const selfByFunction = new Map<string, number>();
const selfByPackage = new Map<string, number>();
for (const [id, us] of selfUs) {
  const node = byId.get(id)!;
  selfByFunction.set(place(node), (selfByFunction.get(place(node)) ?? 0) + us);
  selfByPackage.set(packageOf(node), (selfByPackage.get(packageOf(node)) ?? 0) + us);
}

/** Inclusive time of every function named `name`: samples with such a frame anywhere above them. */
function inclusive(name: string): number {
  let us = 0;
  for (const [id, self] of selfUs) if (onStack(id, name)) us += self;
  return us;
}

console.log(`${file}: ${(totalUs / 1000).toFixed(0)} ms sampled\n\nSelf time by package:`);
console.log(top(selfByPackage, 15).join('\n'));
console.log('\nSelf time by function:');
console.log(top(selfByFunction, 30).join('\n'));
if (watched.length > 0) {
  console.log('\nInclusive time:');
  console.log(top(new Map(watched.map((name) => [name, inclusive(name)])), watched.length).join('\n'));
}
