/** Group, IDMP producer and key suffix of the capability probes (nothing is ever written under it). */
export const CAPABILITY_PROBE_NAME = 'nrs-capability-probe';

/** The capability probe key when the caller names none. */
export const DEFAULT_PROBE_KEY = 'nrs:capability-probe';

/** The feature probe key (the trim-gap probe) when the caller names none. */
export const FEATURE_PROBE_KEY = 'nrs:probe';

/** A probe key next to `stream`, covered by the ACL key patterns that cover the stream. */
export function probeKeyNear(stream: string): string {
  return `${stream}:${CAPABILITY_PROBE_NAME}`;
}

/** The `n`th candidate probe key under `keyBase`, each with its own hash tag: tried until one lands on a wanted node's slot. */
export function probeKeyCandidate(keyBase: string, n: number): string {
  return `${keyBase}:{${n}}`;
}
