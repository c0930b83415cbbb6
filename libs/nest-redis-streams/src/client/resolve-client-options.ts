import { JsonCodec } from '../codec/json.codec.js';
import { InvalidOptionsError } from '../errors/invalid-options.error.js';
import type { PayloadDeserializer, PayloadSerializer } from '../interfaces/payload-codec.interface.js';
import { MESSAGES } from '../messages.js';
import type { StreamRetention } from '../trim/retention-options.interface.js';
import { assertRetention } from '../trim/retention.js';
import { resolveIdempotentWrites } from '../redis/idmp.js';
import type { RedisStreamsClientOptions } from './client-options.interface.js';
import { CLIENT_DEFAULTS } from './client.constants.js';
import { checkConnectionUrls } from '../redis/redis-url-scheme.js';

/** Client options with every default applied. */
export type ResolvedClientOptions = typeof CLIENT_DEFAULTS &
  Pick<RedisStreamsClientOptions, 'connection' | 'retention' | 'idempotentWrites'> & {
    serializer: PayloadSerializer;
    deserializer: PayloadDeserializer;
  };

/** Merges the client defaults once and checks every value. */
export function resolveClientOptions(options: RedisStreamsClientOptions = {}): ResolvedClientOptions {
  const defined = Object.fromEntries(Object.entries(options ?? {}).filter(([, v]) => v !== undefined));
  const codec = new JsonCodec();
  const resolved: ResolvedClientOptions = { ...CLIENT_DEFAULTS, serializer: codec, deserializer: codec, ...defined };
  checkConnectionUrls(resolved.connection);
  for (const key of ['maxPayloadBytes', 'requestTimeoutMs', 'offlineTimeoutMs'] as const) {
    const value = resolved[key];
    if (!Number.isInteger(value) || value <= 0) throw new InvalidOptionsError(MESSAGES.positiveInteger(key, value, ''));
  }
  if (!Number.isInteger(resolved.maxRetriesPerRequest) || resolved.maxRetriesPerRequest < 0) {
    throw new InvalidOptionsError(MESSAGES.positiveInteger('maxRetriesPerRequest', resolved.maxRetriesPerRequest, ' (or 0)'));
  }
  if (typeof resolved.keyPrefix !== 'string')
    throw new InvalidOptionsError(MESSAGES.badString('keyPrefix', resolved.keyPrefix, ''));
  if (resolved.retention) assertRetention(resolved.retention, 'retention');
  resolveIdempotentWrites(resolved.idempotentWrites);
  for (const [pattern, retention] of Object.entries(resolved.retentionByPattern)) {
    assertRetention(retention as StreamRetention, `retentionByPattern["${pattern}"]`);
  }
  for (const [pattern, count] of Object.entries(resolved.partitions)) {
    if (!Number.isInteger(count) || count <= 0)
      throw new InvalidOptionsError(MESSAGES.positiveInteger(`partitions["${pattern}"]`, count, ''));
  }
  return resolved;
}
