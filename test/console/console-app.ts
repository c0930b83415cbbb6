import { type CanActivate, type DynamicModule, type INestApplication, Module, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { RedisStreamsConsoleModule, type RedisStreamsConsoleOptions } from 'nest-redis-streams/console';
import { redisUrl } from '../support/helpers.js';

export interface ConsoleApp {
  app: INestApplication;
  /** URL of the console page, e.g. http://127.0.0.1:port/ops/streams-console */
  base: string;
  /** GET `<base>/api/<path>` → status and parsed JSON. */
  get(path: string): Promise<{ status: number; body: any }>;
  /** POST JSON to `<base>/api/<path>` with the session's CSRF token unless `headers` replaces it. */
  post(path: string, body: object, headers?: Record<string, string>): Promise<{ status: number; body: any }>;
}

/**
 * An HTTP app with only the console mounted (Express unless `fastify`), listening on a free port.
 * `setup.console` replaces `forRoot(options)` (e.g. a `forRootAsync` module); `options.path` still
 * says where it is mounted.
 */
export async function startConsoleApp(
  options: RedisStreamsConsoleOptions,
  setup: { fastify?: boolean; prefix?: string; providers?: Type<CanActivate>[]; console?: DynamicModule } = {},
): Promise<ConsoleApp> {
  @Module({
    imports: [setup.console ?? RedisStreamsConsoleModule.forRoot({ connection: redisUrl(), ...options })],
    providers: setup.providers ?? [],
  })
  class ConsoleTestModule {}
  const app = setup.fastify
    ? await NestFactory.create(ConsoleTestModule, new FastifyAdapter(), { logger: false })
    : await NestFactory.create(ConsoleTestModule, { logger: false });
  if (setup.prefix) app.setGlobalPrefix(setup.prefix);
  await app.listen(0, '127.0.0.1');
  const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  const base = `${url}${setup.prefix ? `/${setup.prefix}` : ''}/${options.path ?? 'streams-console'}`;
  const json = async (res: Response) => ({ status: res.status, body: await res.json().catch(() => null) });
  let token: string | null | undefined;
  return {
    app,
    base,
    get: async (path) => json(await fetch(`${base}/api/${path}`)),
    post: async (path, body, headers) => {
      token ??= (await (await fetch(`${base}/api/session`)).json()).csrfToken;
      const auth = headers ?? (token ? { 'x-nrs-csrf': token } : {});
      return json(
        await fetch(`${base}/api/${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...auth },
          body: JSON.stringify(body),
        }),
      );
    },
  };
}

export const q = (params: Record<string, string | number>) =>
  Object.entries(params)
    .map(([k, v]) => `${k}=${encodeURIComponent(String(v))}`)
    .join('&');

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const WEB = join(__dirname, '../../libs/nest-redis-streams/dist/console/web/app.js');

/**
 * Headless Chromium for the console's browser tests, after checking that it and the built page
 * script exist (a clear message instead of a timeout when either is missing).
 */
export async function launchConsoleBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (or set CHROMIUM_PATH).`);
  if (!existsSync(WEB)) throw new Error(`${WEB} is missing: build the library first (node scripts/build-lib.mjs, or npm test).`);
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
}
