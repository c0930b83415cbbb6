import { REDIS_NOW_MS } from './redis-now.js';
/**
 * A consumer says it is alive: every instance writes it on its reclaim round, so the console, the
 * CLI and the idle-consumer cleanup can tell a live consumer of a quiet stream from a gone one on
 * any server (Redis < 7.2's idle time counts only reads that returned entries).
 *
 * KEYS[1] the group's beats (sorted set: consumer -> when its beat runs out, Redis ms)
 * ARGV[1] consumer, ARGV[2] how long the beat holds (ms)
 * Returns when it runs out.
 *
 * Beats that ran out are removed here, so the set holds about the live consumers; the key expires
 * with its last beat.
 */
export const CONSUMER_BEAT = `
${REDIS_NOW_MS}
local untilMs = now + tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], untilMs, ARGV[1])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIRE', KEYS[1], math.max(tonumber(last[2]) - now, 1))
return untilMs`;
