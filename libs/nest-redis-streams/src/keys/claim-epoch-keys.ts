import { keyBeside } from './slots.js';

/**
 * The claim epoch of one stream's group (a hash: `n`, and `claim-reads` once a consumer reads with
 * XREADGROUP … CLAIM). Every claim of another consumer's entries raises it, so an ack can tell
 * whether anything may have changed owner since it read (see redis/lua/claim-epoch.ts). It shares
 * the stream's hash slot: the claim and the raise, the check and the ack are one script on a
 * cluster. It never expires: a missing hash only costs the fast path until the next ack.
 */
export function claimEpochKey(stream: string, group: string): string {
  return keyBeside(stream, `nrs-claims:${group}`);
}
