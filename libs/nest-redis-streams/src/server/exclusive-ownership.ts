import type { Logger } from '@nestjs/common';
import type { TransportEvents } from '../events/transport-events.js';
import { groupMembersKey } from '../ownership/ownership-keys.js';
import { OwnershipCoordinator } from '../ownership/ownership-coordinator.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import type { StreamConsumer } from '../consumer/index.js';

/**
 * Starts one ownership coordinator per logical stream and group whose handler asked for
 * `ownership: 'exclusive'` (none otherwise: shared consumption makes no extra Redis call). The
 * first round runs before this resolves, so a lone instance owns every partition once listening.
 */
export async function startOwnership(
  consumers: readonly StreamConsumer[],
  keyPrefix: string,
  member: string,
  redis: ScriptedRedis,
  events: TransportEvents,
  logger: Logger,
): Promise<OwnershipCoordinator[]> {
  const byGroup = new Map<string, StreamConsumer[]>();
  for (const consumer of consumers) {
    if (!consumer.options.exclusive) continue;
    const key = `${consumer.subscription.pattern}\u0000${consumer.group}`;
    byGroup.set(key, [...(byGroup.get(key) ?? []), consumer]);
  }
  const coordinators: OwnershipCoordinator[] = [];
  for (const partitions of byGroup.values()) {
    const { subscription, group, consumer } = partitions[0];
    const stream = `${keyPrefix}${subscription.pattern}`;
    const leaseMs = subscription.options.exclusive!.leaseMs;
    const scope = { stream, group, consumer, member, membersKey: groupMembersKey(stream, group), leaseMs };
    const coordinator = new OwnershipCoordinator(redis, scope, partitions, events, logger);
    await coordinator.start();
    coordinators.push(coordinator);
  }
  return coordinators;
}
