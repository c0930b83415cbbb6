import type { Cluster, Redis } from 'ioredis';
import { IDEMPOTENCY_KEY_PREFIX } from '../keys/index.js';
import type { IdempotencyState, IdempotencyStore } from './idempotency-store.interface.js';

const PROCESSING = 'processing';
const DONE = 'done';

// Deletes the claim only while it is still "processing": a late release must not erase "done".
const RELEASE = `if redis.call('GET', KEYS[1]) == '${PROCESSING}' then return redis.call('DEL', KEYS[1]) end return 0`;

/** Idempotency markers in Redis: `SET key processing NX PX`, then `done` once the effect ran. */
export class RedisIdempotencyStore implements IdempotencyStore {
  /**
   * @param redis connection for the markers
   * @param prefix key prefix of the markers @default 'nrs:idem:'
   */
  constructor(
    private readonly redis: Redis | Cluster,
    private readonly prefix = IDEMPOTENCY_KEY_PREFIX,
  ) {}

  async begin(key: string, processingTtlMs: number): Promise<IdempotencyState> {
    const k = this.prefix + key;
    if ((await this.redis.set(k, PROCESSING, 'PX', processingTtlMs, 'NX')) === 'OK') return 'new';
    return (await this.redis.get(k)) === DONE ? 'done' : 'busy';
  }

  async complete(key: string, doneTtlMs: number): Promise<void> {
    await this.redis.set(this.prefix + key, DONE, 'PX', doneTtlMs);
  }

  async release(key: string): Promise<void> {
    await this.redis.eval(RELEASE, 1, this.prefix + key);
  }

  async isDone(key: string): Promise<boolean> {
    return (await this.redis.get(this.prefix + key)) === DONE;
  }
}
