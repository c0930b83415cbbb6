import type { Logger } from '@nestjs/common';
import type { TransportEvents } from '../events/transport-events.js';
import { groupMembersKey } from '../keys/index.js';
import { OwnershipCoordinator } from '../ownership/ownership-coordinator.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import type { ConsumerEngine } from '../consumer/index.js';
import type { HandlerRegistration } from './handler-registry.js';
import type { StreamSubscription } from '../consumer/index.js';

/**
 * Starts one ownership coordinator per logical stream and group whose handler asked for
 * `ownership: 'exclusive'` (none otherwise: shared consumption makes no extra Redis call), over
 * the consumers of its partitions. The first round runs before this resolves, so a lone instance
 * owns every partition once listening.
 */
export async function startOwnership(
  registrations: readonly HandlerRegistration[],
  consumerOf: (subscription: StreamSubscription) => ConsumerEngine,
  member: string,
  redis: ScriptedRedis,
  events: TransportEvents,
  logger: Logger,
): Promise<OwnershipCoordinator[]> {
  const coordinators: OwnershipCoordinator[] = [];
  for (const { stream, group, options, subscriptions } of registrations) {
    if (!options.exclusive) continue;
    const partitions = subscriptions.map(consumerOf);
    const { consumer } = partitions[0];
    const scope = {
      stream,
      group,
      consumer,
      member,
      membersKey: groupMembersKey(stream, group),
      leaseMs: options.exclusive.leaseMs,
    };
    const coordinator = new OwnershipCoordinator(redis, scope, partitions, events, logger);
    await coordinator.start();
    coordinators.push(coordinator);
  }
  return coordinators;
}

/**
 * Who owns which partition (as this instance's last round saw it), the generations, the live
 * members and how often this instance's set of partitions changed.
 */
export function ownershipReport(coordinator: OwnershipCoordinator) {
  return {
    stream: coordinator.scope.stream,
    group: coordinator.scope.group,
    member: coordinator.scope.member,
    members: coordinator.view.members,
    owned: coordinator.ownedPartitions(),
    rebalances: coordinator.rebalances,
    partitions: coordinator.view.partitions,
  };
}
