import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { METRIC_DEFINITIONS } from './metrics.constants.js';
import type { PromClient } from './prom-client.loader.js';

type StreamLabel = 'stream' | 'group';
type RetentionLabel = 'stream' | 'trim';
type MetricKey = keyof typeof METRIC_DEFINITIONS;

const STREAM_LABELS: StreamLabel[] = ['stream', 'group'];

/** Delivery counts worth telling apart: first try, a retry or two, and the default maxDeliveries (5). */
const DELIVERY_BUCKETS = [1, 2, 3, 5, 10];

/** The Prometheus instruments fed by one or more servers. */
export interface MetricInstruments {
  delivered: Counter<StreamLabel>;
  acked: Counter<StreamLabel>;
  failed: Counter<StreamLabel>;
  reclaimed: Counter<StreamLabel>;
  deadLettered: Counter<StreamLabel | 'reason'>;
  lostByTrim: Counter<StreamLabel>;
  leaseRenewals: Counter<StreamLabel>;
  leasesLost: Counter<StreamLabel>;
  skipped: Counter<StreamLabel | 'reason'>;
  leasesExpired: Counter<StreamLabel>;
  partitionRebalances: Counter<StreamLabel>;
  partitionsOwned: Gauge<StreamLabel>;
  partitionsLost: Counter<StreamLabel>;
  handlerDuration: Histogram<StreamLabel | 'outcome'>;
  endToEndLatency: Histogram<StreamLabel>;
  deliveriesToSuccess: Histogram<StreamLabel>;
  pending: Gauge<StreamLabel>;
  oldestIdle: Gauge<StreamLabel>;
  lag: Gauge<StreamLabel>;
  deadLetters: Gauge<StreamLabel>;
  consumers: Gauge<StreamLabel>;
  minIdleTime: Gauge<StreamLabel>;
  readLoopAge: Gauge<StreamLabel>;
  streamLength: Gauge<'stream'>;
  scheduledEntries: Gauge<'stream'>;
  scheduledOverdue: Gauge<'stream'>;
  blockedKeys: Gauge<StreamLabel>;
  blockedEntries: Gauge<StreamLabel>;
  blockedOldest: Gauge<StreamLabel>;
  retentionMaxEntries: Gauge<RetentionLabel>;
  retentionMaxAge: Gauge<RetentionLabel>;
  xaddDuration: Histogram<'stream'>;
  redisMemoryUsed: Gauge<'node'>;
  redisMemoryMax: Gauge<'node'>;
  streamCapability: Gauge<'capability'>;
  redisNode: Gauge<'node' | 'server' | 'version' | 'patch_floor'>;
}

/** Where the instruments live and how the histograms bucket. */
export interface InstrumentSettings {
  registry: Registry;
  prefix: string;
  handlerDurationBuckets: number[];
  endToEndLatencyBuckets: number[];
  xaddDurationBuckets: number[];
}

/**
 * Finds each instrument in the registry or creates it there. Reusing what exists lets several
 * servers (or a re-attach after detach) share one set; a second `new Counter` with the same
 * name would throw.
 */
export function getOrCreateInstruments(client: PromClient, settings: InstrumentSettings): MetricInstruments {
  const { registry, prefix } = settings;
  const get = <M>(key: MetricKey, create: (base: { name: string; help: string; registers: Registry[] }) => M): M => {
    const name = `${prefix}${METRIC_DEFINITIONS[key].name}`;
    const existing = registry.getSingleMetric(name) as M | undefined;
    return existing ?? create({ name, help: METRIC_DEFINITIONS[key].help, registers: [registry] });
  };
  const counter = (key: MetricKey) => get(key, (base) => new client.Counter({ ...base, labelNames: STREAM_LABELS }));
  const gauge = (key: MetricKey) => get(key, (base) => new client.Gauge({ ...base, labelNames: STREAM_LABELS }));
  const gaugeBy = <L extends string>(key: MetricKey, labelNames: L[]) =>
    get(key, (base) => new client.Gauge<L>({ ...base, labelNames }));
  return {
    delivered: counter('delivered'),
    acked: counter('acked'),
    failed: counter('failed'),
    reclaimed: counter('reclaimed'),
    deadLettered: get('deadLettered', (base) => new client.Counter({ ...base, labelNames: [...STREAM_LABELS, 'reason'] })),
    lostByTrim: counter('lostByTrim'),
    leaseRenewals: counter('leaseRenewals'),
    leasesLost: counter('leasesLost'),
    skipped: get('skipped', (base) => new client.Counter({ ...base, labelNames: [...STREAM_LABELS, 'reason'] })),
    leasesExpired: counter('leasesExpired'),
    partitionRebalances: counter('partitionRebalances'),
    partitionsOwned: gauge('partitionsOwned'),
    partitionsLost: counter('partitionsLost'),
    handlerDuration: get(
      'handlerDuration',
      (base) =>
        new client.Histogram({ ...base, labelNames: [...STREAM_LABELS, 'outcome'], buckets: settings.handlerDurationBuckets }),
    ),
    endToEndLatency: get(
      'endToEndLatency',
      (base) => new client.Histogram({ ...base, labelNames: STREAM_LABELS, buckets: settings.endToEndLatencyBuckets }),
    ),
    deliveriesToSuccess: get(
      'deliveriesToSuccess',
      (base) => new client.Histogram({ ...base, labelNames: STREAM_LABELS, buckets: DELIVERY_BUCKETS }),
    ),
    pending: gauge('pending'),
    oldestIdle: gauge('oldestIdle'),
    lag: gauge('lag'),
    deadLetters: gauge('deadLetters'),
    consumers: gauge('consumers'),
    minIdleTime: gauge('minIdleTime'),
    readLoopAge: gauge('readLoopAge'),
    streamLength: gaugeBy('streamLength', ['stream']),
    scheduledEntries: gaugeBy('scheduledEntries', ['stream']),
    scheduledOverdue: gaugeBy('scheduledOverdue', ['stream']),
    blockedKeys: gauge('blockedKeys'),
    blockedEntries: gauge('blockedEntries'),
    blockedOldest: gauge('blockedOldest'),
    retentionMaxEntries: gaugeBy('retentionMaxEntries', ['stream', 'trim']),
    retentionMaxAge: gaugeBy('retentionMaxAge', ['stream', 'trim']),
    xaddDuration: get(
      'xaddDuration',
      (base) => new client.Histogram({ ...base, labelNames: ['stream'], buckets: settings.xaddDurationBuckets }),
    ),
    redisMemoryUsed: gaugeBy('redisMemoryUsed', ['node']),
    redisMemoryMax: gaugeBy('redisMemoryMax', ['node']),
    streamCapability: gaugeBy('streamCapability', ['capability']),
    redisNode: gaugeBy('redisNode', ['node', 'server', 'version', 'patch_floor']),
  };
}
