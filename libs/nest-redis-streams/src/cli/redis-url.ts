import { redactUrl } from '../redis/redact-url.js';
import { lowerRedisScheme, REDIS_SCHEME } from '../redis/redis-url-scheme.js';
import { UsageError } from './errors/usage.error.js';

/** How to fix a URL that does not parse (Redis' and PostgreSQL's alike). */
export const URL_FIX =
  'Check the host and the port (1 to 65535), and percent-encode @ : / ? # in the user name or password (encodeURIComponent).';

/** A checked Redis URL: the text to connect with (its scheme in lower case) and its address. */
export interface RedisUrl {
  href: string;
  host: string;
  port: number;
  /** How it logs in (decoded from the URL), and whether with TLS (`rediss://`). */
  login: SeedLogin;
}

/** What a cluster's nodes are reached with: the same for every node, so every seed must agree. */
export interface SeedLogin {
  username?: string;
  password?: string;
  tls?: Record<string, never>;
}

/**
 * Checks one Redis URL the command line gave (`--url`, a `--cluster` seed, or REDIS_URL, named by
 * `setting`) before anything connects, so that a malformed one is a usage error (exit 2) naming
 * the value, never ioredis' "Invalid URL" from inside the connection (exit 4, as if Redis were
 * down). The value is named without its password.
 */
export function redisUrlFrom(text: string, setting: string, seed: boolean): RedisUrl {
  const shown = `"${redactUrl(text)}"`;
  const scheme = REDIS_SCHEME.exec(text);
  if (!scheme) {
    const valkey = /^valkeys?:\/\//i.test(text) ? ' (Valkey is reached with redis:// and rediss:// too)' : '';
    throw new UsageError(
      `${setting} must be a redis:// or rediss:// URL (several, comma-separated, with --cluster), got ${shown}${valkey}.`,
    );
  }
  // ioredis turns TLS on for "rediss://" spelled in lower case only.
  const href = lowerRedisScheme(text);
  let url: URL;
  try {
    url = new URL(href);
  } catch {
    const list = !seed && text.includes(',') ? '; several seed nodes need --cluster' : '';
    throw new UsageError(`${setting} is not a valid URL: ${shown}${list}. ${URL_FIX}`);
  }
  if (url.hostname === '') throw new UsageError(`${setting} names no host: ${shown}. Write redis://host:6379.`);
  if (!/^\/?(\d+)?$/.test(url.pathname))
    throw new UsageError(`${setting} names a database that is not a number: ${shown}. Write redis://host:6379/0.`);
  const login: SeedLogin = {};
  if (url.username) login.username = decodeURIComponent(url.username);
  if (url.password) login.password = decodeURIComponent(url.password);
  if (url.protocol === 'rediss:') login.tls = {};
  return { href, host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 6379), login };
}

/**
 * The login every `--cluster` seed shares, for ioredis' `redisOptions`: ioredis reaches each node
 * (the seeds and those it discovers) with these options, and takes only the address from a seed.
 * Seeds that log in differently (another user, password or scheme) cannot all be right: refused.
 */
export function clusterLogin(seeds: Array<{ text: string; url: RedisUrl }>, setting: string): SeedLogin {
  const [first, ...rest] = seeds;
  const same = (a: SeedLogin, b: SeedLogin) =>
    a.username === b.username && a.password === b.password && (a.tls === undefined) === (b.tls === undefined);
  const other = rest.find((seed) => !same(seed.url.login, first.url.login));
  if (other !== undefined) {
    throw new UsageError(
      `${setting}: the --cluster seeds log in differently ("${redactUrl(first.text)}" and "${redactUrl(other.text)}": ` +
        'user name, password or redis:// against rediss://). Every node of a cluster is reached with the same login: ' +
        'give each seed the same one.',
    );
  }
  return first.url.login;
}
