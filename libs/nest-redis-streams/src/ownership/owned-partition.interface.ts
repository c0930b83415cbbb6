import type { PartitionFence } from './partition-fence.js';

/** What ownership needs of the consumer of one partition stream; the consumer implements it. */
export interface OwnedPartition {
  readonly stream: string;
  readonly partition: number;
  /** Always set for a partition under exclusive ownership. */
  readonly fence?: PartitionFence;
  /** A new generation was granted: take over the partition's pending entries, then read. */
  acquired(): void;
  /**
   * Cooperative hand-over: stop reading, let running handlers finish (their acks still go out
   * under this generation), hand back whatever did not finish. Resolves when nothing is held.
   */
  handOver(): Promise<void>;
  /** The partition was taken while this instance held it (lease ran out): drop everything held. */
  lost(): void;
}
