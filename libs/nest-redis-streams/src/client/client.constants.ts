import type { StreamRetention } from '../trim/retention-options.interface.js';

/** Defaults of `RedisStreamsClientOptions`, merged once in the client's constructor. */
export const CLIENT_DEFAULTS = {
  keyPrefix: '',
  maxPayloadBytes: 1024 * 1024,
  requestTimeoutMs: 30_000,
  offlineTimeoutMs: 5_000,
  maxRetriesPerRequest: 2,
  retentionByPattern: {} as Record<string, StreamRetention>,
  partitions: {} as Record<string, number>,
};

/** How a client keeps and reads its reply stream (named in ../keys/reply-keys.ts). */
export const REPLY_STREAM = {
  /**
   * A reply stream whose client died without close() expires after this long; a live client
   * renews it every third of it.
   */
  ttlMs: 60_000,
  /** Finite, so a stop or a lost stream is noticed without a message arriving. */
  blockMs: 2_000,
  readCount: 500,
} as const;
