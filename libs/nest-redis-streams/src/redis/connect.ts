import type { Redis } from 'ioredis';
import type { Subject } from 'rxjs';
import { RedisStreamsStatus } from '../events/redis-streams.events.js';
import type { RedisConnectionOptions } from '../interfaces/connection-options.interface.js';
import { MESSAGES } from '../messages.js';
import { describeConnection, isCluster } from './connection.factory.js';

/** How long start-up waits for Redis before failing with an explanation. */
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * Connects a lazy connection, failing with a message that says where Redis was expected and what
 * to do (`setting`: how the caller says where Redis runs, e.g. the CLI's --url). Only start-up
 * gives up: once connected, ioredis reconnects for ever.
 */
export async function connectOrExplain(
  redis: Redis,
  connection: RedisConnectionOptions | undefined,
  setting?: string,
): Promise<void> {
  let lastError = '';
  const onError = (err: Error) => (lastError = err.message || (err as NodeJS.ErrnoException).code || String(err));
  redis.on('error', onError);
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      redis.connect(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), CONNECT_TIMEOUT_MS);
      }),
    ]);
  } catch (err) {
    // A TLS handshake can still fail after this (rediss:// to a server without TLS): with no
    // listener ioredis would print "Unhandled error event" under the message below.
    redis.on('error', () => undefined);
    redis.disconnect();
    // The connection's own error (ECONNREFUSED, auth) says more than "Connection is closed".
    const cause =
      lastError || ((err as Error).message === 'timeout' ? `no answer within ${CONNECT_TIMEOUT_MS} ms` : (err as Error).message);
    throw new Error(MESSAGES.redisUnreachable(describeConnection(connection), cause, setting));
  } finally {
    clearTimeout(timer);
    redis.off('error', onError);
  }
  // ioredis emits 'error' on every failed reconnect; without a listener Node would crash.
  redis.on('error', () => undefined);
  await checkDatabase(redis, connection);
}

/**
 * A database number the server does not have (`redis://host/99`, or any but 0 where the server
 * has one): ioredis only emits an error for its SELECT and carries on in database 0, so every
 * read and write would go to another app's keys. SELECT again and fail start-up instead.
 */
async function checkDatabase(redis: Redis, connection: RedisConnectionOptions | undefined): Promise<void> {
  const db = isCluster(redis) ? 0 : Number(redis.options.db ?? 0);
  if (!db) return;
  await redis.select(db).catch((err: Error) => {
    redis.disconnect();
    throw new Error(MESSAGES.noSuchDatabase(describeConnection(connection), db, err.message));
  });
}

/** Mirrors a connection's life into a transport status subject. */
export function watchStatus(redis: Redis, status$: Subject<RedisStreamsStatus>): void {
  redis.on('ready', () => status$.next(RedisStreamsStatus.CONNECTED));
  redis.on('close', () => status$.next(RedisStreamsStatus.DISCONNECTED));
  redis.on('reconnecting', () => status$.next(RedisStreamsStatus.RECONNECTING));
}

/** How long a QUIT may take at shutdown before the connection is simply dropped. */
const QUIT_TIMEOUT_MS = 2_000;

/**
 * Closes a connection politely (QUIT sends what is queued first) but never waits for ever: on a
 * cluster whose master just died, QUIT can wait for a node that will not answer, and a shutdown
 * must end within its budget. Whatever happens, the connection is disconnected afterwards.
 */
export async function quitWithin(redis: Pick<Redis, 'quit' | 'disconnect'>, timeoutMs = QUIT_TIMEOUT_MS): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    redis.quit().catch(() => undefined),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
      timer.unref();
    }),
  ]);
  clearTimeout(timer);
  redis.disconnect();
}
