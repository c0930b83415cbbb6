import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Controller, type LoggerService, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EventPattern, Payload } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import { RedisStreamsClient, RedisStreamsServer, type RedisStreamsServerOptions } from 'nest-redis-streams';
import { redisClient, unique, waitFor } from '../support/helpers.js';
import { buildApp, readmeSnippets } from '../readme/readme-app.js';
import { readmeAclLines } from './acl-users.js';
import { makeCertificates } from './certificates.js';

// CommonJS helpers shared with the scripts: a private redis-server and a free port for its TLS side.
const { startRedis, freePort } = require('../../scripts/lib/redis-process.cjs') as {
  startRedis(options: { extraArgs: string[] }): Promise<{ url: string; port: number; stop(): Promise<void> }>;
  freePort(): Promise<number>;
};

jest.setTimeout(60_000);

const SECRET = 'Sup3r-Secret-Pa55word';

/** Collects everything Nest and the library log. */
class CapturingLogger implements LoggerService {
  readonly lines: string[] = [];
  log = (...args: unknown[]) => this.lines.push(args.map(String).join(' '));
  error = (...args: unknown[]) =>
    this.lines.push(args.map((a) => (a instanceof Error ? `${a.message} ${a.stack}` : String(a))).join(' '));
  warn = this.log;
  debug = this.log;
  verbose = this.log;
}

function handlers(stream: string, seen: unknown[]) {
  @Controller()
  class Handlers {
    @EventPattern(stream)
    handle(@Payload() data: unknown) {
      seen.push(data);
    }
  }
  @Module({ controllers: [Handlers] })
  class AppModule {}
  return AppModule;
}

/** The app around the README snippet: one handler that prints what it handles. */
const SNIPPET_MAIN = `
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EventPattern, Payload } from '@nestjs/microservices';
import { server } from './redis-tls-server.js';

@Controller()
class Handler {
  @EventPattern(process.env.STREAM!)
  handle(@Payload() data: unknown) {
    console.log('handled ' + JSON.stringify(data));
  }
}
@Module({ controllers: [Handler] })
class AppModule {}

const app = await NestFactory.createMicroservice(AppModule, { strategy: server, logger: ['error', 'warn'] });
app.enableShutdownHooks();
await app.listen();
console.log('listening');
`;

/** Everything a child process prints, as it arrives. */
function outputOf(child: ChildProcess): () => string {
  let text = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
  return () => text;
}

/** SIGTERM, then wait for the exit (the app closes its connections on the way out). */
async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

describe('TLS and secrets', () => {
  let dir: string;
  let certs: ReturnType<typeof makeCertificates>;
  let redis: { url: string; port: number; stop(): Promise<void> };
  let tlsPort: number;
  const closers: Array<() => unknown> = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nrs-tls-'));
    certs = makeCertificates(dir);
    tlsPort = await freePort();
    redis = await startRedis({
      extraArgs: [
        '--tls-port',
        String(tlsPort),
        '--tls-cert-file',
        certs.serverCert,
        '--tls-key-file',
        certs.serverKey,
        '--tls-ca-cert-file',
        certs.ca,
        '--tls-auth-clients',
        'optional',
      ],
    });
    const admin = redisClient(redis.url);
    await admin.call('ACL', 'SETUSER', 'app', 'on', `>${SECRET}`, '~*', '+@all');
    // The README's consumer role, which its TLS snippet connects as.
    const [, ...consumer] = readmeAclLines({ consumer: SECRET })[0];
    await admin.call('ACL', ...consumer);
    await admin.quit();
  });
  afterEach(async () => {
    while (closers.length) await closers.pop()!();
  });
  afterAll(async () => {
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('consumes and produces over TLS (CA and client certificate options, client certificates required) as an ACL user', async () => {
    const stream = unique('tls');
    const seen: unknown[] = [];
    // The README's TLS options, pointed at the test's certificates.
    const connection = {
      host: '127.0.0.1',
      port: tlsPort,
      username: 'app',
      password: SECRET,
      tls: { ca: readFileSync(certs.ca), cert: readFileSync(certs.clientCert), key: readFileSync(certs.clientKey) },
    };
    const server = new RedisStreamsServer({ connection, blockMs: 200 });
    const app = await NestFactory.createMicroservice(handlers(stream, seen), { strategy: server, logger: false });
    await app.listen();
    closers.push(() => app.close());
    const client = new RedisStreamsClient({ connection: { ...connection } });
    closers.push(() => client.close());

    await lastValueFrom(client.emit(stream, { over: 'tls' }));
    await waitFor(() => seen.length === 1, 'the entry consumed over TLS');
    expect(seen).toEqual([{ over: 'tls' }]);
    // The connection really is TLS: Redis lists it on the TLS port.
    const clients = String(await client.unwrap().call('CLIENT', 'INFO'));
    expect(clients).toContain(`laddr=127.0.0.1:${tlsPort}`);
  });

  it("runs the README's TLS snippet as written, pointed at the test's Redis and certificates by its environment variables", async () => {
    const snippet = readmeSnippets().get('tls/redis-tls-server.ts');
    if (!snippet) throw new Error('No document marks a code block <!-- snippet: tls/redis-tls-server.ts -->; this test runs it.');
    const built = buildApp(
      new Map([
        ['tls/redis-tls-server.ts', snippet],
        ['tls/main.ts', SNIPPET_MAIN],
      ]),
    );
    closers.push(() => built.remove());
    const stream = `app:${unique('tls-snippet')}`;
    const app = spawn(process.execPath, [built.entry('tls/main.ts')], {
      env: {
        ...process.env,
        REDIS_HOST: '127.0.0.1',
        REDIS_TLS_PORT: String(tlsPort),
        REDIS_TLS_DIR: dir,
        REDIS_PASSWORD: SECRET,
        STREAM: stream,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const output = outputOf(app);
    closers.push(() => stopProcess(app));
    await waitFor(() => output().includes('listening'), 'the snippet app to listen', 20_000).catch((err: Error) => {
      throw new Error(`${err.message} Its output:\n${output()}`);
    });

    const admin = redisClient(redis.url);
    closers.push(() => admin.quit());
    await admin.xadd(stream, '*', 'over', 'the README snippet');
    await waitFor(() => output().includes('handled {"over":"the README snippet"}'), 'the entry handled by the snippet app').catch(
      (err: Error) => {
        throw new Error(`${err.message} Its output:\n${output()}`);
      },
    );
    // It is connected as the README consumer, on the TLS port.
    const clients = String(await admin.call('CLIENT', 'LIST'));
    expect(clients).toMatch(new RegExp(`laddr=127\\.0\\.0\\.1:${tlsPort} .*user=nrs-consumer`));
  });

  it('refuses a server certificate it cannot verify (no CA given), without the password in the message', async () => {
    const client = new RedisStreamsClient({ connection: `rediss://app:${SECRET}@127.0.0.1:${tlsPort}` });
    closers.push(() => client.close());
    const failure = await lastValueFrom(client.emit('tls-unverified', {})).catch((err: Error) => err);
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toMatch(/certificate/i);
    expect((failure as Error).message).toContain(`rediss://app:***@127.0.0.1:${tlsPort}`);
    expect(JSON.stringify(failure) + String((failure as Error).stack)).not.toContain(SECRET);
  });

  it('turns TLS on for rediss:// in any case, and refuses valkey:// naming it and the fix', async () => {
    // ioredis looks for "rediss://" in lower case: Rediss:// spoke plain text to the TLS port.
    for (const scheme of ['Rediss://', 'REDISS://']) {
      const client = new RedisStreamsClient({ connection: `${scheme}app:${SECRET}@127.0.0.1:${tlsPort}` });
      closers.push(() => client.close());
      const failure = await lastValueFrom(client.emit('tls-case', {})).catch((err: Error) => err);
      // TLS is on: the handshake reached the (unverifiable) certificate.
      expect({ scheme, message: (failure as Error).message }).toEqual({ scheme, message: expect.stringMatching(/certificate/i) });
      expect((failure as Error).message).toContain(`rediss://app:***@127.0.0.1:${tlsPort}`);
    }
    // And plain redis:// in any case still reaches the plain port.
    const plain = new RedisStreamsClient({ connection: `REDIS://app:${SECRET}@127.0.0.1:${redis.port}` });
    closers.push(() => plain.close());
    await lastValueFrom(plain.emit(unique('plain-case'), {}));
    // Refused when the options are read (the client's constructor, the server's listen), naming the fix.
    for (const scheme of ['valkey://', 'Valkeys://']) {
      const connection = `${scheme}app:${SECRET}@127.0.0.1:${redis.port}`;
      const message =
        `Connection URL "${scheme}app:***@127.0.0.1:${redis.port}": Valkey is reached with redis:// (rediss:// for TLS), ` +
        `the scheme ioredis knows; write ${scheme.replace(/^valkey/i, 'redis')}app:***@127.0.0.1:${redis.port}.`;
      expect(() => new RedisStreamsClient({ connection })).toThrow(message);
      const failure = await new Promise<unknown>((resolve) => {
        void new RedisStreamsServer({ connection }).listen((err) => resolve(err)).catch(resolve);
      });
      expect((failure as Error).message).toBe(message);
    }
  });

  it('never logs or reports a password from the URL (wrong password, server and client)', async () => {
    const wrong = `redis://app:${SECRET}-wrong@127.0.0.1:${redis.port}`;
    const logger = new CapturingLogger();
    const options: RedisStreamsServerOptions = { connection: wrong, blockMs: 200 };
    const app = await NestFactory.createMicroservice(handlers(unique('tls-secret'), []), {
      strategy: new RedisStreamsServer(options),
      logger,
    });
    closers.push(() => app.close().catch(() => undefined));
    const serverFailure = await app.listen().then(
      () => null,
      (err: Error) => err,
    );
    const client = new RedisStreamsClient({ connection: wrong });
    closers.push(() => client.close());
    const clientFailure = await lastValueFrom(client.emit('tls-secret', {})).catch((err: Error) => err);

    expect(serverFailure?.message).toMatch(/WRONGPASS|invalid username-password/);
    expect((clientFailure as Error).message).toMatch(/WRONGPASS|invalid username-password/);
    const everything = [
      serverFailure?.message,
      serverFailure?.stack,
      (clientFailure as Error).message,
      (clientFailure as Error).stack,
      ...logger.lines,
    ].join('\n');
    expect(everything).toContain(`127.0.0.1:${redis.port}`);
    expect(everything).not.toContain(SECRET);
  });
});
