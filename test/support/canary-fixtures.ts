import { Controller } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import type { Redis } from 'ioredis';
import { NonRetryableError, failureCause } from 'nest-redis-streams';
import { startMicroservice } from './helpers.js';

/** The error of dead letter n: one failure group whatever n (the number is folded). */
export const CANARY_ERROR = (n: number) => `Order o-${n} was declined by the provider.`;
export const CANARY_CAUSE = failureCause('NonRetryableError', CANARY_ERROR(1)).fingerprint;

/**
 * Dead letters n = `from` … `from + count - 1` of one cause in `<stream>:dlq`, parked by group `g`
 * (created on the stream); entry n carries `{ n }`. Written in one pipeline.
 */
export async function arrangeDeadLetters(redis: Redis, stream: string, count: number, from = 1): Promise<void> {
  await redis.xgroup('CREATE', stream, 'g', '$', 'MKSTREAM').catch((err: Error) => {
    if (!err.message.startsWith('BUSYGROUP')) throw err;
  });
  const pipeline = redis.pipeline();
  for (let n = from; n < from + count; n++) {
    const meta = ['dlq:reason', 'non-retryable', 'dlq:stream', stream, 'dlq:id', `${n}-0`, 'dlq:group', 'g'];
    meta.push('dlq:consumer', 'c1', 'dlq:error', CANARY_ERROR(n), 'dlq:error_class', 'NonRetryableError');
    meta.push('dlq:deliveries', '1', 'dlq:time', String(Date.now()));
    pipeline.xadd(`${stream}:dlq`, '*', ...meta, 'v', 'nrs/1', 'data', JSON.stringify({ n }));
  }
  for (const [err] of (await pipeline.exec()) ?? []) if (err) throw err;
}

/**
 * Group `g`'s consumer of `stream`: every delivery is recorded in `runs`; those `failing` says fail
 * again with the same cause (parked at once), the others succeed (`ran`).
 */
export async function canaryConsumer(
  closers: Array<() => unknown>,
  stream: string,
  failing: (n: number) => boolean,
  connection?: string,
): Promise<{ ran: number[]; runs: number[] }> {
  const ran: number[] = [];
  const runs: number[] = [];
  @Controller()
  class Handler {
    @EventPattern(stream)
    handle(@Payload() data: { n: number }) {
      runs.push(data.n);
      if (failing(data.n)) throw new NonRetryableError(CANARY_ERROR(data.n));
      ran.push(data.n);
    }
  }
  const { app } = await startMicroservice([Handler], { group: 'g', consumer: 'c1', ...(connection ? { connection } : {}) });
  closers.push(() => app.close());
  return { ran, runs };
}
