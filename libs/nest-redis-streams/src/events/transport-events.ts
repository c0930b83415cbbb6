import { EventEmitter } from 'node:events';
import type { DeadLetterReason } from '../dead-letter-reason.js';

/** Identifies one entry of one group. */
export interface EntryRef {
  stream: string;
  group: string;
  consumer: string;
  id: string;
  deliveries: number;
}

/** One partition stream of a group as owned by one instance (exclusive ownership). */
export interface PartitionRef {
  stream: string;
  group: string;
  consumer: string;
  partition: number;
  generation: number;
}

/**
 * Lifecycle events of the transport, for metrics and the application's own alerting
 * (`server.events.on('dead-lettered', ...)`).
 */
/** Why an entry was acknowledged without running its handler. */
export type SkipReason =
  /** A request whose caller's deadline had passed: the caller was already told it failed. */
  | 'request-expired'
  /** A request whose reply stream lies outside the client reply prefix. */
  | 'reply-to-refused'
  /** A re-driven entry addressed to another group of the same stream. */
  | 'other-group';

/** The lifecycle events of `server.events`, each with the arguments its listeners receive. */
export type TransportEventMap = {
  /** An entry was handed to a handler. */
  delivered: [EntryRef];
  /** A handler finished; `endToEndMs` counts from the entry id's timestamp. */
  handled: [EntryRef & { durationMs: number; endToEndMs: number; ok: boolean }];
  /** Entries acknowledged in one batch. */
  acked: [{ stream: string; group: string; count: number }];
  /** A handler failed; the entry stays pending for a retry unless it is dead-lettered next. */
  failed: [EntryRef & { error: unknown }];
  /**
   * An entry was moved to the dead-letter stream (or a tombstone written for it). `count` is the
   * number of entries the record stands for: 1, or for `trimmed-undelivered` how many entries
   * were trimmed before the group read them (their ids are gone, `id` is empty).
   */
  'dead-lettered': [EntryRef & { reason: DeadLetterReason; deadLetterStream: string; deadLetterId: string; count: number }];
  /** Entries taken over from idle consumers by this one. */
  reclaimed: [{ stream: string; group: string; consumer: string; count: number }];
  /** In-flight entries whose lease this consumer renewed. */
  'lease-renewed': [{ stream: string; group: string; count: number }];
  /** This consumer lost an in-flight entry to another consumer. */
  'lease-lost': [EntryRef];
  /** An entry was acknowledged without running its handler (see SkipReason). */
  skipped: [EntryRef & { reason: SkipReason; detail: string }];
  /**
   * A handler ran past `maxHandlerMs`: its lease is no longer renewed, its abort signal fired and
   * the entry becomes reclaimable once idle past min-idle.
   */
  'lease-expired': [EntryRef & { runningMs: number; maxHandlerMs: number }];
};

/**
 * Events of exclusive partition ownership (`ownership: 'exclusive'`), kept apart from
 * TransportEventMap so that consumers of that map (the metrics' recorders) opt in to them.
 */
export type OwnershipEventMap = {
  /** Exclusive ownership: this instance now owns a partition, under a new generation (fencing token). */
  'partition-assigned': [PartitionRef];
  /**
   * Exclusive ownership: this instance gave a partition up (`rebalance`: handed over to another
   * instance; `shutdown`) or lost it (`lost`: its lease ran out, another instance may own it).
   */
  'partition-revoked': [PartitionRef & { reason: 'rebalance' | 'shutdown' | 'lost' }];
  /** Exclusive ownership: the set of partitions this instance owns changed. */
  rebalanced: [{ stream: string; group: string; consumer: string; members: number; owned: number[] }];
};

/** The typed emitter behind `server.events`: entries delivered, handled, acked, failed, parked, reclaimed or skipped, leases, ownership changes. */
export class TransportEvents extends EventEmitter<TransportEventMap & OwnershipEventMap> {}
