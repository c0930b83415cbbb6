import type { OwnershipEventMap, TransportEventMap } from '../events/transport-events.js';
import { DeadLetterReason } from '../dead-letter-reason.js';
import type { MetricInstruments } from './metric-instruments.js';

/** One recorder per transport event, turning it into counter increments and observations. */
type RecordedEvents = TransportEventMap & OwnershipEventMap;
export type EventRecorders = { [K in keyof RecordedEvents]: (...args: RecordedEvents[K]) => void };

const labels = ({ stream, group }: { stream: string; group: string }) => ({ stream, group });

/** Maps every transport event onto the instruments. */
export function eventRecorders(m: MetricInstruments): EventRecorders {
  return {
    delivered: (e) => m.delivered.inc(labels(e)),
    handled: (e) => {
      m.handlerDuration.observe({ ...labels(e), outcome: e.ok ? 'ok' : 'error' }, e.durationMs / 1_000);
      // A failed attempt has not reached its end; ids set by a skewed producer clock can lie ahead of ours.
      if (!e.ok) return;
      m.endToEndLatency.observe(labels(e), Math.max(0, e.endToEndMs) / 1_000);
      m.deliveriesToSuccess.observe(labels(e), e.deliveries);
    },
    acked: (e) => m.acked.inc(labels(e), e.count),
    failed: (e) => m.failed.inc(labels(e)),
    'dead-lettered': (e) => {
      m.deadLettered.inc({ ...labels(e), reason: e.reason }, e.count);
      if (e.reason === DeadLetterReason.PAYLOAD_TRIMMED || e.reason === DeadLetterReason.TRIMMED_UNDELIVERED) {
        m.lostByTrim.inc(labels(e), e.count);
      }
    },
    reclaimed: (e) => m.reclaimed.inc(labels(e), e.count),
    'lease-renewed': (e) => m.leaseRenewals.inc(labels(e), e.count),
    'lease-lost': (e) => m.leasesLost.inc(labels(e)),
    skipped: (e) => m.skipped.inc({ ...labels(e), reason: e.reason }),
    'lease-expired': (e) => m.leasesExpired.inc(labels(e)),
    'partition-assigned': () => undefined,
    'partition-revoked': (e) => {
      if (e.reason === 'lost') m.partitionsLost.inc(labels(e));
    },
    rebalanced: (e) => {
      m.partitionRebalances.inc(labels(e));
      m.partitionsOwned.set(labels(e), e.owned.length);
    },
  };
}
