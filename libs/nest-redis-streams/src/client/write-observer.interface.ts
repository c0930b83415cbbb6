import type { StreamRetention } from '../trim/retention-options.interface.js';

/**
 * What a recorder (e.g. `RedisStreamsMetrics.attachClient`) is told about a client's writes.
 * Called on the write path: keep it cheap and never throw.
 */
export interface ClientWriteObserver {
  /** Redis answered one XADD to `stream` (stored or refused) `seconds` after its pipeline was sent. */
  xaddAnswered(stream: string, seconds: number): void;
  /** `stream` was written with `retention`: once per stream while this observer is set. */
  retentionOf(stream: string, retention: StreamRetention): void;
}
