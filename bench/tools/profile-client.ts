// Where a consumer's CPU goes, by part of the client library: the RESP decoder, turning reply
// buffers into strings, the rest of ioredis (commands, queues, socket writes), this library,
// NestJS, JSON.parse, socket writes, garbage collection. For the client-library row's profiles
// (`npm run bench -- --only=ioredis --profile`, one folder per ioredis variant):
//   node dist/bench/tools/profile-client.js <file.cpuprofile> [--from=functionName]
// A sample counts for the first frame, from the top of its stack down, that belongs to one of the
// parts below; Node's own frames (socket reads and writes, timers) count for the caller that
// started them, so a socket write issued by ioredis is ioredis' cost. Idle time is left out.
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, ...rest] = process.argv.slice(2);
const from = rest.find((a) => a.startsWith('--from='))?.slice('--from='.length);
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parentOf = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);

const IOREDIS = /node_modules\/ioredis\d*\/built\//;

/** The part a frame belongs to, or null for frames that count for their caller. */
function partOf({ functionName, url }: ProfileNode['callFrame']): string | null {
  if (functionName === '(garbage collector)') return 'garbage collection';
  if (functionName === '(idle)') return 'idle';
  if (functionName === '(program)') return 'V8 (program)';
  // Sampled time inside a socket write includes the kernel waking redis-server on this machine.
  if (url === 'node:internal/stream_base_commons' && /^write(v)?Generic$/.test(functionName)) return 'socket writes';
  // The codec's deserialize is little more than JSON.parse, which V8 does not show as a frame.
  if (url.endsWith('/codec/json.codec.js') && functionName === 'deserialize') return 'JSON.parse (the codec)';
  if (url.includes('/redis-parser/') || (IOREDIS.test(url) && url.includes('/built/resp/'))) return 'RESP decoder';
  if (IOREDIS.test(url) && /convertBufferToString|convertValue|transformReply/i.test(functionName))
    return 'reply buffers → strings';
  if (IOREDIS.test(url) || url.includes('/node_modules/@ioredis/')) return 'ioredis, the rest (commands, queue, writes)';
  if (url.includes('/libs/nest-redis-streams/')) return 'this library';
  if (/node_modules\/(@nestjs|rxjs|reflect-metadata)\//.test(url)) return 'NestJS';
  if (url.includes('/dist/bench/')) return 'bench handler';
  return null;
}

function partOfSample(id: number): string {
  for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
    const part = partOf(byId.get(at)!.callFrame);
    if (part) return part;
  }
  return 'Node itself (event loop, socket reads, timers)';
}

function onStack(id: number, name: string): boolean {
  for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
    if (byId.get(at)!.callFrame.functionName === name) return true;
  }
  return false;
}

const first =
  from === undefined
    ? 0
    : Math.max(
        0,
        profile.samples.findIndex((id) => onStack(id, from)),
      );
const byPart = new Map<string, number>();
profile.samples.forEach((id, i) => {
  if (i < first) return;
  const part = partOfSample(id);
  byPart.set(part, (byPart.get(part) ?? 0) + (profile.timeDeltas[i] ?? 0));
});
byPart.delete('idle');
const busy = [...byPart.values()].reduce((a, b) => a + b, 0);
console.log(`${file}: ${(busy / 1000).toFixed(0)} ms of CPU sampled (idle left out)\n`);
for (const [part, us] of [...byPart].sort((a, b) => b[1] - a[1])) {
  console.log(`${((100 * us) / busy).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms  ${part}`);
}
