import { Redis as IORedis, type Redis } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { PublishFailedError, RedisStreamsClient, StreamRecord } from 'nest-redis-streams';
import { fieldsToObject, testContext, unique, waitFor } from '../support/helpers.js';

// CommonJS helper shared with the scripts; it starts and kills private redis-server processes.
const { freePort, startRedis } = require('../../scripts/lib/redis-process.cjs') as {
  freePort(): Promise<number>;
  startRedis(options?: { appendonly?: boolean }): Promise<RedisProcess>;
};

interface RedisProcess {
  url: string;
  kill(signal?: string): Promise<void>;
  start(): Promise<unknown>;
  stop(): Promise<void>;
}

/** Runs `work`, resolving with what it threw and how long that took. */
async function failure(work: () => Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = Date.now();
  try {
    await work();
  } catch (error) {
    return { error, ms: Date.now() - started };
  }
  throw new Error('Expected a failure, but it succeeded.');
}

describe('RedisStreamsClient when Redis cannot take the entry', () => {
  const { closers } = testContext();

  it('fails fast, naming the stream and the address, when nothing listens on the port', async () => {
    const port = await freePort();
    const client = new RedisStreamsClient({ connection: `redis://127.0.0.1:${port}` });
    closers.push(() => client.close());
    const stream = unique('down');
    const { error, ms } = await failure(() => lastValueFrom(client.emit(stream, { a: 1 })));
    expect(error).toBeInstanceOf(PublishFailedError);
    expect((error as PublishFailedError).maybeStored).toBe(false);
    expect((error as Error).message).toContain(`Could not write to stream "${stream}"`);
    expect((error as Error).message).toContain(`redis://127.0.0.1:${port}`);
    expect((error as Error).message).toMatch(/Start Redis, or set the "connection" option/);
    expect(ms).toBeLessThan(5_000);
  });

  it('fails within the offline bound while Redis is down, writes nothing late, and works again once it is back', async () => {
    const server = await startRedis({ appendonly: false });
    closers.push(() => server.stop());
    const client = new RedisStreamsClient({ connection: server.url, offlineTimeoutMs: 500 });
    closers.push(() => client.close());
    const stream = unique('outage');
    await lastValueFrom(client.emit(stream, 'before'));

    await server.kill();
    // The process is gone; wait until the client noticed, so the write meets a down connection.
    await waitFor(() => client.unwrap<Redis>().status !== 'ready', 'the client to see the connection drop');
    const { error, ms } = await failure(() => lastValueFrom(client.emit(stream, 'during')));
    expect(error).toBeInstanceOf(PublishFailedError);
    expect((error as Error).message).toContain(`was unreachable for 500 ms; nothing was written to stream "${stream}"`);
    expect((error as Error).message).toContain('raise "offlineTimeoutMs"');
    expect((error as PublishFailedError).maybeStored).toBe(false);
    expect(ms).toBeLessThan(3_000);

    await server.start();
    await waitFor(
      () =>
        lastValueFrom(client.emit(stream, 'after')).then(
          () => true,
          () => false,
        ),
      'an emit to succeed after Redis came back',
    );
    const inspect: Redis = client.unwrap();
    const data = ((await inspect.xrange(stream, '-', '+')) as Array<[string, string[]]>).map(([, f]) =>
      JSON.parse(f[f.indexOf('data') + 1]),
    );
    // Not persisted (appendonly off): "before" went with the old process, "during" was never sent.
    expect(data).not.toContain('during');
    expect(data).toContain('after');
  }, 60_000); // a redis-server process, restarted

  it('reports "OOM command not allowed" as out of memory, with the fix', async () => {
    const server = await startRedis({ appendonly: false });
    closers.push(() => server.stop());
    const client = new RedisStreamsClient({ connection: server.url });
    closers.push(() => client.close());
    const redis: Redis = await client.connect();
    await redis.config('SET', 'maxmemory', '1');
    const stream = unique('oom');
    const { error } = await failure(() => lastValueFrom(client.emit(stream, { big: 'enough' })));
    expect(error).toBeInstanceOf(PublishFailedError);
    expect((error as Error).message).toContain(`Redis is out of memory and refused the entry for stream "${stream}"`);
    expect((error as Error).message).toContain('OOM command not allowed');
    expect((error as Error).message).toContain('raise maxmemory');
    await redis.config('SET', 'maxmemory', '0');
    expect(await redis.exists(stream)).toBe(0);
  }, 60_000); // a redis-server process
  it('says "may or may not be stored" when the connection breaks after the write was sent, and a retry with the same eventId stores it once', async () => {
    const server = await startRedis({ appendonly: false });
    closers.push(() => server.stop());
    const admin = new IORedis(server.url);
    closers.push(() => admin.quit());
    // No retries: the in-flight write fails as soon as its connection is gone.
    const client = new RedisStreamsClient({ connection: server.url, maxRetriesPerRequest: 0 });
    closers.push(() => client.close());
    await client.connect();
    const stream = unique('broken');
    const record = new StreamRecord({ orderId: 'ord-9' }, { eventId: 'ord-9:placed' });
    // Redis holds writes while paused, so the XADD is on the wire and unanswered when its
    // connection is killed: the client cannot know whether it was stored (here it was not).
    await admin.call('CLIENT', 'PAUSE', '10000', 'WRITE');
    const emitted = failure(() => lastValueFrom(client.emit(stream, record)));
    await waitFor(async () => ((await admin.call('CLIENT', 'LIST')) as string).includes('cmd=xadd'), 'the XADD to reach Redis');
    const line = ((await admin.call('CLIENT', 'LIST')) as string).split('\n').find((l) => l.includes('cmd=xadd'))!;
    await admin.call('CLIENT', 'KILL', 'ID', /\bid=(\d+)/.exec(line)![1]);
    await admin.call('CLIENT', 'UNPAUSE');
    const { error } = await emitted;
    expect(error).toBeInstanceOf(PublishFailedError);
    expect((error as PublishFailedError).maybeStored).toBe(true);
    expect((error as Error).message).toContain(`broke while writing to stream "${stream}"`);
    expect((error as Error).message).toContain('emit it again with the same eventId');
    expect(await admin.exists(stream)).toBe(0);

    // What the message tells the caller to do: the same record again, once Redis answers.
    await waitFor(
      () =>
        lastValueFrom(client.emit(stream, record)).then(
          () => true,
          () => false,
        ),
      'the retried emit to succeed',
    );
    const entries = (await admin.xrange(stream, '-', '+')) as Array<[string, string[]]>;
    expect(entries).toHaveLength(1);
    expect(fieldsToObject(entries[0][1]).event_id).toBe('ord-9:placed');
  }, 60_000); // a redis-server process
});
