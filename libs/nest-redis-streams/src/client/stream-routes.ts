import { partitionOf, partitionStreams } from '../keys/index.js';
import type { StreamRetention } from '../trim/retention-options.interface.js';
import { xaddTrimArgs } from '../trim/retention.js';
import type { ResolvedClientOptions } from './resolve-client-options.js';
import { StreamRecord } from './stream-record.js';

/** Where the entries of one pattern go, and how they are trimmed. */
export interface StreamRoute {
  /** The pattern's stream key: `<keyPrefix><pattern>`. */
  readonly stream: string;
  /** Its partitions' keys (the stream itself when it has one). */
  readonly partitions: readonly string[];
  readonly retention: StreamRetention | undefined;
  /**
   * XADD arguments between the key and the fields (trim arguments, then the id `*`) when they
   * never change; null under MINID retention, whose lowest id moves with the clock.
   */
  readonly head: ReadonlyArray<string | number> | null;
}

/** Patterns remembered at most; an application writing to more (one per tenant...) starts over. */
const MAX_ROUTES = 1_000;

/**
 * Routes of the patterns a client writes to, worked out once per pattern rather than on every
 * emit (normalizing, option lookups, key and trim arguments). Picks the partition of an entry of a
 * partitioned pattern.
 */
export class StreamRoutes {
  private readonly routes = new Map<unknown, StreamRoute>();
  private nextPartition = 0;

  constructor(
    private readonly options: ResolvedClientOptions,
    private readonly normalize: (pattern: unknown) => string,
  ) {}

  /** The route of `pattern`. */
  of(pattern: unknown): StreamRoute {
    // Object patterns are normalized each time: a new object would never hit the cache.
    const cacheable = typeof pattern === 'string';
    let route = cacheable ? this.routes.get(pattern) : undefined;
    if (route) return route;
    route = this.build(this.normalize(pattern));
    if (cacheable) {
      if (this.routes.size >= MAX_ROUTES) this.routes.clear();
      this.routes.set(pattern, route);
    }
    return route;
  }

  /**
   * Stream of one entry: the route's stream, or a partition: by partitionKey; without one by the
   * record's eventId, so a re-publish of the same event (an outbox relay whose mark-sent COMMIT
   * failed, a producer's retry) lands in the partition the first copy went to; round-robin for
   * data without either (its event id is made up per write, so no copy can share it).
   */
  streamFor(route: StreamRoute, data: unknown): string {
    const { partitions } = route;
    if (partitions.length === 1) return partitions[0];
    const key = data instanceof StreamRecord ? (data.partitionKey ?? data.eventId) : undefined;
    const partition = key === undefined ? this.nextPartition++ % partitions.length : partitionOf(key, partitions.length);
    return partitions[partition];
  }

  /** XADD arguments between the key and the fields for an entry written now. */
  headOf(route: StreamRoute): ReadonlyArray<string | number> {
    return route.head ?? [...xaddTrimArgs(route.retention), '*'];
  }

  private build(normalized: string): StreamRoute {
    const { keyPrefix, retentionByPattern, retention: anyStream, partitions } = this.options;
    const stream = `${keyPrefix}${normalized}`;
    // Own keys only: a pattern named "constructor" must not find Object.prototype's.
    const retention = Object.hasOwn(retentionByPattern, normalized) ? retentionByPattern[normalized] : anyStream;
    const minId = retention !== undefined && !retention.safe && retention.maxLen === undefined;
    return {
      stream,
      partitions: partitionStreams(stream, Object.hasOwn(partitions, normalized) ? partitions[normalized] : 1),
      retention,
      head: minId ? null : [...xaddTrimArgs(retention), '*'],
    };
  }
}
