import { randomUUID } from 'node:crypto';
import type { ReadPacket } from '@nestjs/microservices';
import type { Cluster, Redis } from 'ioredis';
import { resolveIdempotentWrites } from '../redis/idmp.js';
import { eventMember } from '../keys/index.js';
import { type DueTime, cancelScheduled, scheduleEntry } from '../schedule/index.js';
import type { EntryEncoder } from './entry-encoder.js';
import { readyWithin } from './ready-within.js';
import type { ResolvedClientOptions } from './resolve-client-options.js';
import { StreamRecord } from './stream-record.js';
import type { StreamRoutes } from './stream-routes.js';

/**
 * Delayed `emit()`s: the entry is encoded now (so a bad payload fails now) and held in the
 * stream's schedule until its due time, when a server's mover adds it to the stream. Its event id
 * is its key in the schedule (keys/schedule-keys.ts eventMember): one the caller gave, or a fresh
 * one, which `emit()` then answers with. A delay is counted from Redis' clock, in the script.
 */
export class ScheduledWrites {
  /** XADD … IDMP producer for scheduled entries with an explicit event id ('' when idempotentWrites is false). */
  private readonly idmpProducer: string;
  private readonly offlineTimeoutMs: number;

  constructor(
    options: ResolvedClientOptions,
    private readonly routes: StreamRoutes,
    private readonly encoder: EntryEncoder,
    /** The client's command connection (connecting first when needed). */
    private readonly connect: () => Promise<Redis | Cluster>,
  ) {
    this.idmpProducer = resolveIdempotentWrites(options.idempotentWrites)?.producer ?? '';
    this.offlineTimeoutMs = options.offlineTimeoutMs;
  }

  /** Holds `packet`'s entry in `stream`'s schedule until `due`; resolves with its event id. */
  async schedule(packet: ReadPacket, stream: string, record: StreamRecord, due: DueTime): Promise<string> {
    const explicit = record.eventId !== undefined;
    const eventId = record.eventId ?? randomUUID();
    const withId = explicit
      ? packet
      : {
          ...packet,
          data: new StreamRecord(record.data, { headers: record.headers, partitionKey: record.partitionKey, eventId }),
        };
    const fields = this.encoder.encode(withId, stream);
    const redis = await this.connect();
    await readyWithin(redis, this.offlineTimeoutMs);
    const head = this.routes.headOf(this.routes.of(packet.pattern));
    await scheduleEntry(redis, stream, eventMember(eventId), due, explicit ? this.idmpProducer : '', head, fields);
    return eventId;
  }

  /** Cancels the scheduled entry `eventId` of `pattern` (in whichever partition holds it). */
  async cancel(pattern: unknown, eventId: string): Promise<boolean> {
    const redis = await this.connect();
    await readyWithin(redis, this.offlineTimeoutMs);
    let cancelled = false;
    for (const stream of this.routes.of(pattern).partitions) {
      // By event id only: an event id never names a RetryLater's copy (its member is nrs:retry:…).
      if ((await cancelScheduled(redis, stream, [eventMember(eventId)])) !== null) cancelled = true;
    }
    return cancelled;
  }
}
