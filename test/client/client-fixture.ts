import type { Redis } from 'ioredis';
import { RedisStreamsClient, type RedisStreamsClientOptions } from 'nest-redis-streams';
import { redisClient, redisUrl } from '../support/helpers.js';

/** What a client suite shares: an inspection connection and clients/apps closed after each test. */
export interface ClientFixture {
  /** Plain connection for arranging and inspecting Redis. */
  readonly redis: Redis;
  /** A client on the test Redis, closed after the test. */
  client(options?: RedisStreamsClientOptions): RedisStreamsClient;
  /** Runs `close` after the test (in reverse order of registration). */
  onCleanup(close: () => Promise<unknown>): void;
}

/** Registers the suite's hooks; call it at the top of a `describe`. */
export function useClientFixture(): ClientFixture {
  let redis: Redis | null = null;
  const cleanups: Array<() => Promise<unknown>> = [];
  beforeAll(() => {
    redis = redisClient();
  });
  afterEach(async () => {
    for (const close of cleanups.splice(0).reverse()) await close();
  });
  afterAll(async () => {
    await redis?.quit();
  });
  return {
    get redis() {
      if (!redis) throw new Error('The fixture connection exists only inside tests.');
      return redis;
    },
    client(options = {}) {
      const client = new RedisStreamsClient({ connection: redisUrl(), ...options });
      cleanups.push(() => client.close());
      return client;
    },
    onCleanup(close) {
      cleanups.push(close);
    },
  };
}
