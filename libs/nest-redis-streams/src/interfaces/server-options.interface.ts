import type { SchedulerRegistry } from '@nestjs/schedule';
import type { RedisConnectionOptions } from './connection-options.interface.js';
import type { PayloadDeserializer } from './payload-codec.interface.js';
import type { StreamHandlerOptions } from './stream-handler-options.interface.js';

/** Options of `RedisStreamsServer`. Handler-level fields are defaults for every handler. */
export interface RedisStreamsServerOptions extends StreamHandlerOptions {
  /**
   * Where Redis is.
   * @default process.env.REDIS_URL, else 'redis://127.0.0.1:6379'
   */
  connection?: RedisConnectionOptions;
  /**
   * Prefix put before every pattern to form the stream key (`orders` → `app:orders`).
   * @default ''
   */
  keyPrefix?: string;
  /**
   * Consumer name of this instance. Must stay the same across restarts of one instance so its
   * pending entries are replayed to it: use the pod name.
   * @default process.env.HOSTNAME, else os.hostname()
   */
  consumer?: string;
  /**
   * How long one blocking read waits for new entries before it loops (finite, so a shutdown or a
   * deleted stream is noticed).
   * @default 2000
   */
  blockMs?: number;
  /**
   * How long `close()` waits for running handlers before leaving their entries pending.
   * @default 10000
   */
  shutdownTimeoutMs?: number;
  /**
   * Renew the ownership of in-flight entries so that no other consumer reclaims a slow but
   * healthy handler's entry.
   * @default true
   */
  leaseRenewal?: boolean;
  /**
   * Check the owner of every acked entry (XPENDING rows in the ack script), even while the group's
   * claim epoch shows that nobody can have claimed it since it was read. Turn it on while something
   * outside the library claims entries of these groups (a raw XCLAIM, an older version of this
   * library during a rollout); see docs/RELIABILITY.md, "Cheap acks".
   * @default false
   */
  checkEveryAck?: boolean;
  /**
   * Where every node has `XREADGROUP … CLAIM` (Redis 8.4+), read idle entries of dead consumers
   * together with new ones, within a second of becoming claimable, instead of waiting for the
   * reclaimer's round. The read runs in a script that raises the claim epoch when it claimed, so
   * acks stay cheap (docs/RELIABILITY.md, "Cheap acks"). CLAIM counts a delivery of each entry it
   * takes, so a read takes over only what can start at once (free handler slots). `false`: idle entries wait for the
   * reclaimer (`reclaimIntervalMs`) as on older servers. Measured: docs/performance.md, "CLAIM
   * reads and cheap acks".
   * @default true
   */
  claimReads?: boolean;
  /**
   * How often the reclaimer looks for entries idle past `minIdleTimeMs` (XAUTOCLAIM). 0 turns it off.
   * @default 5000
   */
  reclaimIntervalMs?: number;
  /**
   * Entries asked for per XAUTOCLAIM call.
   * @default 100
   */
  reclaimCount?: number;
  /**
   * Longest wait between two looks at the schedule of each served stream (delayed `emit()`s, long
   * `RetryLater`s): the mover wakes at the next due time, and at least this often to see entries
   * scheduled meanwhile, so an entry arrives at most about this late. 0 turns this instance's mover
   * off (another instance's mover still moves the entries).
   * @default 1000
   */
  scheduleCheckMs?: number;
  /**
   * First retry delay after a failure; doubles with every delivery, capped at `minIdleTimeMs`.
   * @default 1000
   */
  retryBackoffMs?: number;
  /**
   * Remove consumers of this instance's groups idle longer than this and holding no pending
   * entries. 0 turns it off.
   * @default 0
   */
  removeIdleConsumersAfterMs?: number;
  /**
   * Requests (`send()`) are answered only on streams whose key starts with this prefix; a
   * request naming any other `reply_to` stream is refused (acked without running, logged and
   * counted), so writing a request cannot make the server XADD into an arbitrary stream.
   * @default `<keyPrefix>nrs:replies:` (where clients with the same keyPrefix put their reply streams)
   */
  replyStreamPrefix?: string;
  /**
   * Call event handlers that nothing is bound to as their controller method, without Nest's
   * per-message pipeline; any guard, interceptor, pipe, filter (but this library's own), custom
   * parameter decorator or request scope keeps that handler on the pipeline, and the start-up
   * log names each handler's path (`server.getHandlerPaths()`). `false` runs every handler
   * through Nest's pipeline. See docs/performance.md, "Direct handlers".
   * @default true
   */
  directHandlers?: boolean;
  /** Decodes the `data` field of this library's envelope. @default JSON */
  deserializer?: PayloadDeserializer;
  /** The application's SchedulerRegistry, so reclaim intervals show up in it. @default a private one */
  schedulerRegistry?: SchedulerRegistry;
}
