import net from 'node:net';

/** A TCP relay in front of a Redis whose client-to-server direction a test can hold and release. */
export interface RedisGate {
  url: string;
  /** From now on, bytes clients send are kept here instead of reaching Redis. */
  hold(): void;
  /** Sends what was kept, in order, and lets traffic through again. */
  release(): void;
  /** What was kept, as text. */
  kept(): string;
  /** Closes the connections with bytes kept, never sending those, and lets traffic through again. */
  cut(): void;
  close(): Promise<void>;
}

export async function startRedisGate(port: number): Promise<RedisGate> {
  let held = false;
  const pipes: Array<{ client: net.Socket; upstream: net.Socket; kept: Buffer[] }> = [];
  const server = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    const pipe = { client, upstream, kept: [] as Buffer[] };
    pipes.push(pipe);
    upstream.pipe(client);
    client.on('data', (chunk: Buffer) => (held ? pipe.kept.push(chunk) : upstream.write(chunk)));
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: own } = server.address() as net.AddressInfo;
  return {
    url: `redis://127.0.0.1:${own}`,
    hold: () => (held = true),
    release: () => {
      held = false;
      for (const pipe of pipes) for (const chunk of pipe.kept.splice(0)) pipe.upstream.write(chunk);
    },
    kept: () => pipes.map((pipe) => Buffer.concat(pipe.kept).toString()).join(''),
    cut: () => {
      held = false;
      for (const pipe of pipes) {
        if (pipe.kept.length === 0) continue;
        pipe.kept = [];
        pipe.client.destroy();
      }
    },
    close: () => {
      for (const { client, upstream } of pipes) {
        client.destroy();
        upstream.destroy();
      }
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
