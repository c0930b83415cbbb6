import type { RedisConnectionOptions } from '../interfaces/connection-options.interface.js';
import type { PayloadDeserializer, PayloadSerializer } from '../interfaces/payload-codec.interface.js';
import type { StreamRetention } from '../trim/retention-options.interface.js';
import type { IdempotentWritesOptions } from '../redis/idmp.js';

/**
 * Options of `RedisStreamsClient`, e.g. as the `options` of
 * `ClientsModule.register([{ name, customClass: RedisStreamsClient, options }])`.
 */
export interface RedisStreamsClientOptions {
  /**
   * Where Redis is.
   * @default process.env.REDIS_URL, else 'redis://127.0.0.1:6379'
   */
  connection?: RedisConnectionOptions;
  /**
   * Prefix put before every pattern to form the stream key (`orders` → `app:orders`); it also
   * prefixes this client's reply stream. Use the server's `keyPrefix`.
   * @default ''
   */
  keyPrefix?: string;
  /**
   * Largest entry `emit()`/`send()` write, in bytes of all fields (the serialized data plus the
   * envelope). A larger one fails before anything is written.
   * @default 1048576 (1 MiB)
   */
  maxPayloadBytes?: number;
  /**
   * How long `send()` waits for the last reply before it fails and forgets the request. The
   * request carries this deadline (`deadline`, ms since epoch on this host's clock): a server
   * that reads it later acknowledges it without running it.
   * @default 30000
   */
  requestTimeoutMs?: number;
  /**
   * How long a write waits for Redis to come back while the connection is down, before it fails
   * without having written anything.
   * @default 5000
   */
  offlineTimeoutMs?: number;
  /**
   * Reconnect attempts a command that was already sent waits through when the connection breaks,
   * before it fails (ioredis `maxRetriesPerRequest`). Such a write may or may not be stored.
   * @default 2
   */
  maxRetriesPerRequest?: number;
  /**
   * Retention of every stream this client writes to. Plain `{ maxLen }` / `{ minIdAgeMs }` trims
   * on each XADD (`MAXLEN ~` / `MINID ~`) and ignores consumer groups; `safe: true` trims
   * periodically and never removes what a group has not acknowledged.
   * @default undefined (streams are not trimmed)
   */
  retention?: StreamRetention;
  /**
   * Retention per pattern (the pattern given to `emit()`/`send()`, without `keyPrefix`), in place
   * of `retention` for those streams.
   * @default {}
   */
  retentionByPattern?: Record<string, StreamRetention>;
  /**
   * Partition count per pattern, the same number as the server handler's `partitions`. Entries of
   * such a pattern go to `<stream>:{n}`: n from the record's `partitionKey` (the same key always
   * lands in the same partition), round-robin without one.
   * @default {}
   */
  partitions?: Record<string, number>;
  /**
   * Entries with an explicit event id (`new StreamRecord(data, { eventId })`, the outbox relay's
   * rows) are written with XADD … IDMP where every node offers it (Redis 8.6+): a copy sent again
   * within the window (an emit retried after a lost reply, a relay killed between XADD and marking
   * the row sent) stores nothing and answers the first entry's id. The window (how long and how
   * many ids a stream remembers) is the stream's own unless set here. Elsewhere, or with `false`,
   * plain XADDs: the consumers' inbox absorbs a copy.
   * @default { producer: 'nest-redis-streams' }
   */
  idempotentWrites?: IdempotentWritesOptions | false;
  /**
   * Turns data into the envelope's `data` field; the server's `deserializer` must read it.
   * @default JsonCodec
   */
  serializer?: PayloadSerializer;
  /**
   * Reads the `response`/`err` fields of replies. The server writes them as JSON, so change it
   * only together with the server.
   * @default JsonCodec
   */
  deserializer?: PayloadDeserializer;
}
