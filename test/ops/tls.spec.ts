import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Controller, type LoggerService, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EventPattern, Payload } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import { RedisStreamsClient, RedisStreamsServer, type RedisStreamsServerOptions } from 'nest-redis-streams';
import { redisClient, unique, waitFor } from '../support/helpers.js';

// CommonJS helpers shared with the scripts: a private redis-server and a free port for its TLS side.
const { startRedis, freePort } = require('../../scripts/lib/redis-process.cjs') as {
  startRedis(options: { extraArgs: string[] }): Promise<{ url: string; port: number; stop(): Promise<void> }>;
  freePort(): Promise<number>;
};

jest.setTimeout(60_000);

const SECRET = 'Sup3r-Secret-Pa55word';

/** A CA, a server certificate for 127.0.0.1 and a client certificate, made with openssl. */
function makeCertificates(dir: string): Record<'ca' | 'caKey' | 'serverCert' | 'serverKey' | 'clientCert' | 'clientKey', string> {
  const file = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=nrs-test-ca',
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.crt'),
  );
  writeFileSync(file('server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  for (const [name, ext] of [
    ['server', ['-extfile', file('server.ext')]],
    ['client', []],
  ] as const) {
    openssl(
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-subj',
      `/CN=nrs-${name}`,
      '-keyout',
      file(`${name}.key`),
      '-out',
      file(`${name}.csr`),
    );
    openssl(
      'x509',
      '-req',
      '-in',
      file(`${name}.csr`),
      '-CA',
      file('ca.crt'),
      '-CAkey',
      file('ca.key'),
      '-CAcreateserial',
      '-days',
      '2',
      '-out',
      file(`${name}.crt`),
      ...ext,
    );
  }
  return {
    ca: file('ca.crt'),
    caKey: file('ca.key'),
    serverCert: file('server.crt'),
    serverKey: file('server.key'),
    clientCert: file('client.crt'),
    clientKey: file('client.key'),
  };
}

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

  it('refuses a server certificate it cannot verify (no CA given), without the password in the message', async () => {
    const client = new RedisStreamsClient({ connection: `rediss://app:${SECRET}@127.0.0.1:${tlsPort}` });
    closers.push(() => client.close());
    const failure = await lastValueFrom(client.emit('tls-unverified', {})).catch((err: Error) => err);
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toMatch(/certificate/i);
    expect((failure as Error).message).toContain(`rediss://127.0.0.1:${tlsPort}`);
    expect(JSON.stringify(failure) + String((failure as Error).stack)).not.toContain(SECRET);
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
