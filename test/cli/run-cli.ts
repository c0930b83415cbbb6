import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** The compiled command, as `npx nest-redis-streams` runs it. */
export const CLI = join(__dirname, '../../libs/nest-redis-streams/dist/cli/main.js');

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Spawns the real binary with `args`; REDIS_URL comes from the environment unless `env` overrides it.
 * A spawn that takes more than 60 s is killed (code -1): a start-up takes 0.7 s on a quiet machine,
 * and was seen at 20 s on a busy one.
 */
export function runCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliRun> {
  if (!existsSync(CLI)) {
    throw new Error(`${CLI} is missing: build the library first (node scripts/build-lib.mjs, or npm test).`);
  }
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * Runs `jobs` (each spawns the binary) with at most `width` at a time, answers in their order:
 * a spawn waits on its start-up (0.7 s quiet, seconds on a busy machine) far more than on the CPU.
 */
export async function runBounded<T>(jobs: Array<() => Promise<T>>, width = 6): Promise<T[]> {
  const results: T[] = new Array(jobs.length);
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const i = next++;
      results[i] = await jobs[i]();
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, jobs.length) }, worker));
  return results;
}
