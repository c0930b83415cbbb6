import { keyBeside } from './slots.js';

/**
 * The real times of a group's entries waiting for a retry back-off (a hash: id -> record, see
 * recovery/retry-waits.ts), beside the stream (same hash slot) so the retry script writes it.
 */
export function retryWaitsKey(stream: string, group: string): string {
  return keyBeside(stream, `nrs-retry-waits:${group}`);
}

/** When each record of `retryWaitsKey` is next checked for staleness (a sorted set: id -> ms). */
export function retryWaitChecksKey(stream: string, group: string): string {
  return keyBeside(stream, `nrs-retry-checks:${group}`);
}

/** The consumers of a group that beat lately (a sorted set: consumer -> beat's expiry, Redis ms). */
export function consumerBeatsKey(stream: string, group: string): string {
  return keyBeside(stream, `nrs-beats:${group}`);
}
