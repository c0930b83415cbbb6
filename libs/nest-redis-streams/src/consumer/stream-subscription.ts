import type { MessageHandler } from '@nestjs/microservices';
import type { AckMode } from '../interfaces/stream-handler-options.interface.js';

/** Handler options after defaults were applied and invariants forced. */
export interface ResolvedHandlerOptions {
  group: string;
  concurrency: number;
  /** Entries held at once; with autoReadAhead, the least the read-ahead starts from. */
  prefetchCount: number;
  /** Present when no prefetchCount was given: the read-ahead follows the handler's pace (ReadAhead). */
  autoReadAhead?: true;
  startId: string;
  ackMode: AckMode;
  maxDeliveries: number;
  minIdleTimeMs: number;
  deadLetterStream: string;
  orderingKey?: string | ((data: unknown) => string | undefined);
  maxHandlerMs: number;
  /** Present only with `onDeadLetter: 'block-key'`: a parked entry holds the later entries of its key. */
  onDeadLetter?: 'block-key';
  /** Present only on batch handlers: entries per call, and how long a partial batch may wait. */
  batch?: { maxSize: number; maxWaitMs: number };
  /** Present only with `ownership: 'exclusive'`: the partitions are owned one instance at a time. */
  exclusive?: { leaseMs: number };
}

/** One stream read in one group by one (possibly chained) handler. */
export interface StreamSubscription {
  pattern: string;
  stream: string;
  /** Partition index when the pattern is spread over several streams; 0 otherwise. */
  partition: number;
  /** `event` for @EventPattern, `message` for @MessagePattern (request/response). */
  kind: 'event' | 'message';
  handler: MessageHandler;
  options: ResolvedHandlerOptions;
}
