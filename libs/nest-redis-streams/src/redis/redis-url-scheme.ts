import { InvalidOptionsError } from '../errors/invalid-options.error.js';
import { MESSAGES } from '../messages.js';
import { redactUrl } from './redact-url.js';

/** The schemes ioredis connects with, in any case (schemes are case-insensitive, RFC 3986). */
export const REDIS_SCHEME = /^(rediss?):\/\//i;

/** Valkey's own spellings, which ioredis does not know (it would read `valkey` as the host). */
const VALKEY_SCHEME = /^valkeys?:\/\//i;

/** A URL with its `redis://`/`rediss://` scheme in lower case; any other text as it is. */
export function lowerRedisScheme(url: string): string {
  const scheme = REDIS_SCHEME.exec(url);
  return scheme ? scheme[1].toLowerCase() + url.slice(scheme[1].length) : url;
}

/**
 * A connection URL as ioredis must see it. ioredis turns TLS on for `rediss://` spelled in lower
 * case only: `Rediss://` connected in plain text. `valkey://` and `valkeys://` are refused
 * (naming the value, without its password, and the fix) rather than guessed: ioredis would read
 * `valkey` as a host name and retry it for ever.
 */
export function redisUrlForIoredis(url: string): string {
  if (VALKEY_SCHEME.test(url)) throw new InvalidOptionsError(MESSAGES.valkeyScheme(redactUrl(url)));
  return lowerRedisScheme(url);
}

/**
 * Checks a `connection` option's URLs (a URL, or a cluster's seeds given as URLs) when the options
 * are read, so that a valkey:// URL is an options error at start-up, not a failed write later.
 */
export function checkConnectionUrls(connection: unknown): void {
  if (typeof connection === 'string') redisUrlForIoredis(connection);
  const seeds = (connection as { cluster?: unknown } | null)?.cluster;
  if (Array.isArray(seeds)) for (const seed of seeds) if (typeof seed === 'string') redisUrlForIoredis(seed);
}
