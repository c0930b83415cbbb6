import { hostname, userInfo } from 'node:os';
import type { Redis } from 'ioredis';
import type { RedisConnectionOptions } from '../interfaces/connection-options.interface.js';
import { connectOrExplain } from '../redis/connect.js';
import { createRedisConnection } from '../redis/connection.factory.js';
import { StreamOperations } from '../operations/stream-operations.js';
import type { StreamOperationsOptions } from '../operations/stream-operations-options.interface.js';
import { type Parsed, stringOption } from './cli-args.js';
import { type Output, STD_OUTPUT } from './output.js';
import { clusterLogin, redisUrlFrom } from './redis-url.js';

/** What a command runs with: the operations service, who acts, and where output goes (escaped). */
export interface CliContext extends Output {
  ops: StreamOperations;
  redis: Redis;
  actor: string;
  json: boolean;
  /** The environment the command line runs with (DATABASE_URL for `reconcile`). */
  env: NodeJS.ProcessEnv;
}

/** `--url` (comma-separated seeds with `--cluster`), else REDIS_URL, else redis://127.0.0.1:6379. */
export function connectionFrom(parsed: Parsed, env: NodeJS.ProcessEnv): RedisConnectionOptions {
  const given = stringOption(parsed, 'url');
  const url = given ?? env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const setting = given === undefined && env.REDIS_URL !== undefined ? 'REDIS_URL' : '--url';
  if (!parsed.values.cluster) return redisUrlFrom(url, setting, false).href;
  const seeds = url.split(',').map((seed) => ({ text: seed.trim(), url: redisUrlFrom(seed.trim(), setting, true) }));
  return {
    cluster: seeds.map(({ url: { host, port } }) => ({ host, port })),
    clusterOptions: {
      // A command-line tool fails instead of waiting for a cluster that does not answer.
      clusterRetryStrategy: () => null,
      // ioredis takes only the address from a seed: the seeds' user, password and TLS go here.
      redisOptions: clusterLogin(seeds, setting),
    },
  };
}

/**
 * Connects (failing fast with where Redis was expected) and builds the context; with `connect`
 * false (a command that reads only PostgreSQL) the connection is made but never opened.
 */
export async function openContext(
  parsed: Parsed,
  env: NodeJS.ProcessEnv,
  options: StreamOperationsOptions = {},
  connect = true,
): Promise<CliContext> {
  const connection = connectionFrom(parsed, env);
  const redis = createRedisConnection(connection, 'cli', {
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
    // After a refused connect ioredis arms a timer (2 s by default) to destroy a socket that is
    // already closed: it kept the command running that long after saying Redis is unreachable.
    disconnectTimeout: 200,
  });
  if (connect) await connectOrExplain(redis, connection, 'pass --url redis://host:6379 (or set REDIS_URL)');
  const dlq = stringOption(parsed, 'dead-letter-stream');
  const streams = dlq
    ? options.streams?.map((s) => (typeof s === 'string' ? { stream: s, deadLetterStream: dlq } : s))
    : options.streams;
  return {
    ops: new StreamOperations(redis, { ...options, streams }),
    redis,
    actor: stringOption(parsed, 'actor') ?? `cli:${userInfo().username}@${hostname()}`,
    json: parsed.values.json === true,
    env,
    ...STD_OUTPUT,
  };
}
