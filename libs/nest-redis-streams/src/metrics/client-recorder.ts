import type { ClientWriteObserver } from '../client/write-observer.interface.js';
import type { StreamRetention } from '../trim/retention-options.interface.js';
import type { MetricInstruments } from './metric-instruments.js';
import { METRICS_MESSAGES } from './metrics.constants.js';

/** Turns a client's writes into the XADD histogram and the retention gauges. */
export function clientWriteRecorder(m: MetricInstruments, warn: (message: string) => void): ClientWriteObserver {
  return {
    xaddAnswered(stream: string, seconds: number): void {
      // Runs on the write path, inside the batch's reply handling: a throw must not fail the write.
      try {
        m.xaddDuration.observe({ stream }, seconds);
      } catch (err) {
        warn(METRICS_MESSAGES.listenerFailed('xadd', (err as Error).message));
      }
    },
    retentionOf(stream: string, retention: StreamRetention): void {
      const labels = { stream, trim: retention.safe ? 'safe' : 'on-write' };
      try {
        if (retention.maxLen !== undefined) m.retentionMaxEntries.set(labels, retention.maxLen);
        if (retention.minIdAgeMs !== undefined) m.retentionMaxAge.set(labels, retention.minIdAgeMs / 1_000);
      } catch (err) {
        warn(METRICS_MESSAGES.listenerFailed('retention', (err as Error).message));
      }
    },
  };
}
