import type { Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import type { DecodedEntry } from '../codec/envelope.js';
import type { RedisStreamsContext } from '../context/redis-streams.context.js';
import type { RedisStreamsBatchContext } from '../context/redis-streams-batch.context.js';
import type { TransportEvents } from '../events/transport-events.js';
import type { PayloadDeserializer } from '../interfaces/payload-codec.interface.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import type { WatchedAck } from '../redis/watched-ack.js';
import type { StreamSubscription } from './stream-subscription.js';

/** What a consumer needs from the server that owns it. */
export interface ConsumerRuntime {
  consumer: string;
  blockMs: number;
  retryBackoffMs: number;
  deserializer: PayloadDeserializer;
  commands: ScriptedRedis;
  reader: Redis;
  /** Acks under WATCH on their own connection (single node only; see redis/watched-ack.ts). */
  watchedAck?: WatchedAck;
  events: TransportEvents;
  logger: Logger;
  /** The server has Redis 7.0's stream counters (entries-read, ENTRIESREAD): see probeRedisFeatures. */
  streamCounters: boolean;
  /** A read across a trimmed gap makes the counters forget the loss: see ProbedRedisFeatures. */
  readForgetsTrimGap: boolean;
  /**
   * Read with XREADGROUP … CLAIM min-idle (every node has it, leases are renewed, reclaiming is on):
   * idle entries are taken over by the read itself; the XAUTOCLAIM rounds stay as the sweep.
   */
  claimRead?: boolean;
  /** Never stamp reads with the claim epoch: every ack checks the owner (see RedisStreamsServerOptions). */
  checkEveryAck?: boolean;
  /** The Redis user the connections log in as, named in the fix when Redis refuses a permission. */
  aclUser: string;
  /** Requests are answered only on reply streams under this prefix. */
  replyStreamPrefix: string;
  /** This start's member id in exclusive ownership (consumer name plus a random id). */
  member?: string;
  /** OpenTelemetry is installed and configured: run handlers in consumer spans. */
  tracing: boolean;
  /** Calls the handler; the promise resolves with what it returned (an Observable is not awaited). */
  invoke(subscription: StreamSubscription, entry: DecodedEntry, ctx: RedisStreamsContext): Promise<unknown>;
  /** Calls a batch handler with the payloads and the batch's context, like `invoke`. */
  invokeBatch(subscription: StreamSubscription, payloads: unknown[], ctx: RedisStreamsBatchContext): Promise<unknown>;
}
