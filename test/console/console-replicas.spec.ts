import { type IncomingMessage, type Server, type ServerResponse, createServer, request } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { readDocuments } from '../readme/documents.js';
import { testContext, unique } from '../support/helpers.js';
import { type ConsoleApp, startConsoleApp } from './console-app.js';

const { redis, closers } = testContext();

/** One origin in front of `backends`, sending each request to the next one in turn (a load balancer). */
async function roundRobin(backends: ConsoleApp[]): Promise<string> {
  let next = 0;
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const target = new URL(backends[next++ % backends.length].base);
    const upstream = request(
      { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => server.close(resolve)));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/streams-console`;
}

async function twoReplicas(stream: string, secrets: [string | undefined, string | undefined]): Promise<string> {
  const audit = unique('audit');
  const replicas: ConsoleApp[] = [];
  for (const csrfSecret of secrets) {
    const replica = await startConsoleApp({ streams: [stream], auditStream: audit, guard: () => 'ops', csrfSecret });
    closers.push(() => replica.app.close());
    replicas.push(replica);
  }
  return roundRobin(replicas);
}

/** The page's calls through the origin: the session (one replica), then `writes` cursor moves (alternating). */
async function session(base: string) {
  return (await (await fetch(`${base}/api/session`)).json()) as { csrfToken: string };
}
async function moveCursor(base: string, stream: string, token: string) {
  const res = await fetch(`${base}/api/cursor`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-nrs-csrf': token },
    body: JSON.stringify({ stream, group: 'g', end: true }),
  });
  return { status: res.status, message: ((await res.json()) as { message?: string }).message };
}

describe('two console replicas behind one origin (real Redis)', () => {
  it('with the same csrfSecret, writes succeed whichever replica answers', async () => {
    const stream = unique('replicas');
    await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    const base = await twoReplicas(stream, ['shared-secret', 'shared-secret']);
    const { csrfToken } = await session(base);
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push((await moveCursor(base, stream, csrfToken)).status);
    expect(answers).toEqual([200, 200, 200, 200]);
  });

  it('without a shared secret, the other replica refuses the token, saying to set csrfSecret alike', async () => {
    const stream = unique('replicas');
    await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    const base = await twoReplicas(stream, [undefined, undefined]);
    // The session came from the first replica; the origin sends the next request to the second.
    const { csrfToken } = await session(base);
    const refused = await moveCursor(base, stream, csrfToken);
    expect(refused.status).toBe(403);
    expect(refused.message).toContain('give every instance the same csrfSecret');
    expect((await moveCursor(base, stream, csrfToken)).status).toBe(200);
  });
});

describe('the docs document every console option', () => {
  it('lists each property of RedisStreamsConsoleOptions in the console options table', () => {
    const root = join(__dirname, '../..');
    const source = readFileSync(join(root, 'libs/nest-redis-streams/src/console/console-options.interface.ts'), 'utf8');
    const body = source.slice(source.indexOf('export interface RedisStreamsConsoleOptions'));
    const options = [...body.slice(0, body.indexOf('\n}')).matchAll(/^ {2}(\w+)\??:/gm)].map((m) => m[1]);
    expect(options.length).toBeGreaterThan(10);
    const readme = readDocuments();
    const table = readme.slice(readme.indexOf('| option | default | what it does |'));
    const documented = table
      .slice(0, table.indexOf('\n\n'))
      .split('\n')
      .flatMap((row) => [...(row.split('|')[1] ?? '').matchAll(/`(\w+)`/g)].map((m) => m[1]));
    expect(options.filter((o) => !documented.includes(o))).toEqual([]);
  });
});
