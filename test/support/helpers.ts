import { Controller, type INestMicroservice, Logger, Module, type Type } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { NestFactory } from '@nestjs/core';
import { Redis } from 'ioredis';
import { RedisStreamsExceptionFilter, RedisStreamsServer, type RedisStreamsServerOptions } from 'nest-redis-streams';

let counter = 0;

/** A stream/group name no other test (or earlier run) uses. */
export function unique(prefix: string): string {
  counter += 1;
  return `t:${prefix}:${process.pid}:${Date.now().toString(36)}:${counter}`;
}

export function redisUrl(): string {
  const url = process.env.REDIS_URL;
  if (!url) throw new Error('REDIS_URL is not set: run the tests through `npm test` (it starts redis-server).');
  return url;
}

/** A plain client for arranging and inspecting Redis in tests; close it in afterEach/afterAll. */
export function redisClient(url = redisUrl()): Redis {
  return new Redis(url, { maxRetriesPerRequest: 1 });
}

/** Polls until `check` returns a truthy value; fails with `what` after the timeout. */
export async function waitFor<T>(check: () => T | Promise<T>, what: string, timeoutMs = 15_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value) return value as NonNullable<T>;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${String(last)})` : ''}.`);
}

/** The two ways a handler runs (docs/performance.md, "Direct handlers"): `describe.each(HANDLER_PATHS)`. */
export const HANDLER_PATHS: Array<['direct' | 'pipeline']> = [['direct'], ['pipeline']];
let forcedPath: 'direct' | 'pipeline' | undefined;

/**
 * Runs the handlers that startMicroservice() starts in this describe block on one path
 * (`directHandlers: true` or `false`), and fails each start whose handlers did not take it: a
 * handler-semantics suite wrapped in `describe.each(HANDLER_PATHS)` cannot pass on the wrong one.
 */
export function runHandlersOn(path: 'direct' | 'pipeline'): void {
  beforeAll(() => {
    forcedPath = path;
  });
  afterAll(() => {
    forcedPath = undefined;
  });
}

/**
 * On the pipeline every handler runs through Nest's; on the direct path at least one does not,
 * and none keeps the pipeline for want of its application (which would make both runs the same).
 */
function expectForcedPath(server: RedisStreamsServer, path: 'direct' | 'pipeline'): void {
  const paths = server.getHandlerPaths();
  const wrong =
    path === 'pipeline'
      ? paths.filter((p) => p.path !== 'pipeline')
      : paths.some((p) => p.path === 'direct')
        ? paths.filter((p) => /directHandlers is false|could not be (reached|read)/.test(p.reason ?? ''))
        : paths;
  if (paths.length === 0 || wrong.length > 0) {
    throw new Error(`Expected the ${path} path, got ${JSON.stringify(paths)}.`);
  }
}

/** Starts a Nest microservice with the given controllers on a RedisStreamsServer. */
export async function startMicroservice(
  controllers: Type[],
  options: RedisStreamsServerOptions,
  providers: Type[] = [],
  withFilter = true,
  imports: Type[] = [],
  /** Runs before listen(), e.g. to subscribe to `server.events` before the first read. */
  beforeListen: (server: RedisStreamsServer) => void = () => undefined,
): Promise<{ app: INestMicroservice; server: RedisStreamsServer }> {
  @Module({ controllers, providers, imports })
  class TestModule {}
  const path = forcedPath && { directHandlers: forcedPath === 'direct' };
  const server = new RedisStreamsServer({ connection: redisUrl(), blockMs: 200, ...path, ...options });
  const app = await NestFactory.createMicroservice(TestModule, { strategy: server, logger: quietLogger() });
  if (withFilter) app.useGlobalFilters(new RedisStreamsExceptionFilter());
  beforeListen(server);
  await app.listen();
  if (forcedPath) {
    try {
      expectForcedPath(server, forcedPath);
    } catch (err) {
      await app.close();
      throw err;
    }
  }
  return { app, server };
}

/** Keeps expected error logs out of the test output unless NRS_TEST_LOGS=1. */
export function quietLogger(): false | Logger {
  return process.env.NRS_TEST_LOGS === '1' ? new Logger() : false;
}

export async function pendingCount(redis: Redis, stream: string, group: string): Promise<number> {
  const [count] = (await redis.xpending(stream, group)) as [number];
  return Number(count);
}

/** Turns a flat field list into an object (test assertions only). */
export function fieldsToObject(fields: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < fields.length; i += 2) out[fields[i]] = fields[i + 1];
  return out;
}

/** Entries of a stream as [id, fields-object] pairs. */
export async function readAll(redis: Redis, stream: string): Promise<Array<[string, Record<string, string>]>> {
  const entries = await redis.xrange(stream, '-', '+');
  return entries.map(([id, fields]) => [id, fieldsToObject(fields)]);
}

/**
 * Per-suite fixtures: a Redis client for arranging and inspecting (quit after the suite) and a
 * list of closers run after each test, newest first, so every app and process is shut down.
 */
export function testContext(): { redis: Redis; closers: Array<() => Promise<unknown>> } {
  const redis = redisClient();
  const closers: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    while (closers.length) await closers.pop()!();
  });
  afterAll(() => redis.quit());
  return { redis, closers };
}

/**
 * Starts a microservice whose one handler records every payload of `stream` it receives (the
 * most common consumer in these tests). Closed by the suite's closers.
 */
export async function startRecorder<T = unknown>(
  closers: Array<() => Promise<unknown>>,
  stream: string,
  options: RedisStreamsServerOptions = {},
  extras: Record<string, unknown> = {},
): Promise<{ app: INestMicroservice; server: RedisStreamsServer; seen: T[] }> {
  const seen: T[] = [];
  @Controller()
  class Recorder {
    @EventPattern(stream, extras)
    handle(@Payload() data: unknown) {
      seen.push(data as T);
    }
  }
  const started = await startMicroservice([Recorder], options);
  closers.push(() => started.app.close());
  return { ...started, seen };
}

/**
 * The fields of a dead letter as the transport writes them (`dlq:*` metadata, then the original
 * fields), for tests that arrange a dead-letter stream by hand.
 */
export function deadLetterFields(
  meta: { stream: string; id: string; group: string; reason: string; error: string; deliveries?: number },
  original: string[],
): string[] {
  return [
    ...['dlq:reason', meta.reason, 'dlq:stream', meta.stream, 'dlq:id', meta.id, 'dlq:group', meta.group],
    ...['dlq:consumer', 'c1', 'dlq:error', meta.error, 'dlq:error_class', 'Error'],
    ...['dlq:deliveries', String(meta.deliveries ?? 1), 'dlq:time', String(Date.now()), ...original],
  ];
}
