// `node --import <this file>` in a benchmark child (client-library scenario): picks the ioredis
// the whole process uses and its default options, and proves afterwards which one ran.
//   BENCH_IOREDIS          package to load for `ioredis` (e.g. `ioredis5`, an npm alias); unset: ioredis
//   BENCH_IOREDIS_OPTIONS  JSON merged into `Redis.defaultOptions` (e.g. {"protocol":2}); the
//                          library passes only a connection name, a retry strategy and lazyConnect,
//                          so every other option it opens connections with comes from these defaults
// The child's `done` message gets an `ioredis` field: every copy of ioredis loaded in the process
// (found in the CommonJS module cache, where an ESM import of ioredis lands too) with its version.
import { readFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';
import { dirname, join } from 'node:path';

/** What the child reports: the ioredis copies it loaded and the defaults it changed. */
export interface IoredisReport {
  loaded: Array<{ dir: string; version: string }>;
  options: Record<string, unknown>;
}

const target = process.env.BENCH_IOREDIS ?? 'ioredis';
// Registered for the repository's own ioredis too: every variant then pays for the same loader
// thread (module resolution at start-up), so the hook itself is not a difference between them.
register('./ioredis-hooks.js', import.meta.url, { data: { target } });

const options = JSON.parse(process.env.BENCH_IOREDIS_OPTIONS ?? '{}') as Record<string, unknown>;
// Resolved through the hook above, like every later import of ioredis.
const { Redis } = await import('ioredis');
// Typed private, but it is what the constructor fills missing options from (in 5 and 6).
Object.assign((Redis as unknown as { defaultOptions: Record<string, unknown> }).defaultOptions, options);

const moduleCache = createRequire(import.meta.url).cache;

/** Each loaded ioredis, by the folder holding its built/Redis.js. */
function loadedCopies(): IoredisReport['loaded'] {
  return Object.keys(moduleCache)
    .filter((file) => /[\\/]built[\\/]Redis\.js$/.test(file))
    .map((file) => join(dirname(file), '..'))
    .map((dir) => {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name: string; version: string };
      return { dir: dir.replace(/^.*node_modules[\\/]/, ''), version: `${pkg.name}@${pkg.version}` };
    });
}

const send = process.send?.bind(process);
if (send) {
  process.send = ((message: { type?: string }, ...rest: unknown[]) => {
    const report: IoredisReport = { loaded: loadedCopies(), options };
    const sent = message?.type === 'done' ? { ...message, ioredis: report } : message;
    return (send as (...args: unknown[]) => boolean)(sent, ...rest);
  }) as typeof process.send;
}
