import type { Logger } from '@nestjs/common';
import type { TransportEvents } from '../events/transport-events.js';
import { groupMembersKey } from '../ownership/ownership-keys.js';
import { OwnershipCoordinator } from '../ownership/ownership-coordinator.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import type { StreamConsumer } from './stream-consumer.js';

/** One logical stream read in one group under exclusive ownership, and its consumers (one per partition). */
export interface ExclusiveStream {
  /** The logical stream's key: the partitions' parent. */
  stream: string;
  group: string;
  leaseMs: number;
  consumers: readonly StreamConsumer[];
}

/**
 * Starts one ownership coordinator per logical stream and group whose handler asked for
 * `ownership: 'exclusive'` (none otherwise: shared consumption makes no extra Redis call). The
 * first round runs before this resolves, so a lone instance owns every partition once listening.
 */
export async function startOwnership(
  exclusive: readonly ExclusiveStream[],
  member: string,
  redis: ScriptedRedis,
  events: TransportEvents,
  logger: Logger,
): Promise<OwnershipCoordinator[]> {
  const coordinators: OwnershipCoordinator[] = [];
  for (const { stream, group, leaseMs, consumers } of exclusive) {
    const { consumer } = consumers[0];
    const scope = { stream, group, consumer, member, membersKey: groupMembersKey(stream, group), leaseMs };
    const coordinator = new OwnershipCoordinator(redis, scope, consumers, events, logger);
    await coordinator.start();
    coordinators.push(coordinator);
  }
  return coordinators;
}
