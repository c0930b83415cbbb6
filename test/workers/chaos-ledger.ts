// The ledger of the chaos suite (test/chaos): key names and payload flags shared by the chaos
// workers and the suite. The ledger lives on a redis-server of its own that the suite never kills,
// so that it stays the truth about what was produced and what was processed.

/** What must become of an entry: processed by the handler, or parked in the dead-letter stream. */
export type Expectation = 'process' | 'dead-letter';

/** Behaviour asked of the consumer by an entry's payload (`data.chaos`). */
export interface ChaosFlags {
  /** The handler throws on every delivery. */
  poison?: boolean;
  /** The handler ends its process (exit code 3) on every delivery. */
  exit?: boolean;
  /** The process SIGKILLs itself after the effect and before the ack, on the first delivery. */
  crashAfterEffect?: boolean;
  /** The process SIGKILLs itself inside the guarded effect (claim taken, effect not applied), on the first delivery. */
  crashInEffect?: boolean;
  /** The handler takes this long. */
  slowMs?: number;
}

/** Ledger keys of one scenario run. */
export function ledgerKeys(run: string) {
  return {
    /** key → stream entry id, written only once XADD returned that id. */
    produced: `${run}:produced`,
    /** key → Expectation. */
    expect: `${run}:expect`,
    /** key → how many times a handler of the group started on it. */
    deliveries: (group: string) => `${run}:deliveries:${group}`,
    /** key → how many times the group's effect was applied. */
    effects: (group: string) => `${run}:effects:${group}`,
    /** key → consumer that applied the effect. */
    appliedBy: (group: string) => `${run}:by:${group}`,
    /** Prefix of the idempotency markers (RedisIdempotencyStore). */
    idempotency: `${run}:idem:`,
    /** Counters of transport events, summed over all processes. */
    stats: `${run}:stats`,
    /** process label → its largest resident set size, in bytes. */
    rss: `${run}:rss`,
    /** Set when a worker saw Object.prototype changed. */
    polluted: `${run}:polluted`,
  };
}

/** Ledger key of an entry: its business event id, else its stream entry id (foreign entries). */
export function entryKey(eventId: string | undefined, entryId: string): string {
  return eventId ?? `entry:${entryId}`;
}

/** The chaos flags of a decoded payload; foreign field maps and hostile payloads have none. */
export function chaosFlags(data: unknown): ChaosFlags {
  if (typeof data !== 'object' || data === null || !Object.hasOwn(data, 'chaos')) return {};
  const flags = (data as { chaos: unknown }).chaos;
  return typeof flags === 'object' && flags !== null ? (flags as ChaosFlags) : {};
}
