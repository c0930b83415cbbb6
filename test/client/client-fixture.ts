import type { Redis } from 'ioredis';
import { RedisStreamsClient, type RedisStreamsClientOptions } from 'nest-redis-streams';
import { redisUrl, testContext } from '../support/helpers.js';

/** `testContext()` plus a factory of clients on the test Redis that are closed after each test. */
export function clientContext(): {
  redis: Redis;
  closers: Array<() => Promise<unknown>>;
  client(options?: RedisStreamsClientOptions): RedisStreamsClient;
} {
  const context = testContext();
  const client = (options: RedisStreamsClientOptions = {}) => {
    const created = new RedisStreamsClient({ connection: redisUrl(), ...options });
    context.closers.push(() => created.close());
    return created;
  };
  return { ...context, client };
}
