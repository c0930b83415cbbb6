import type { Logger } from '@nestjs/common';
import { pairsToObject } from '../redis/replies.js';
import type { ScriptedRedis } from '../redis/scripts.js';

/**
 * Deletes consumers of a group that have been idle longer than `idleMs` and hold no pending
 * entries. The pending check and the delete run in one script: deleting a consumer drops its PEL.
 */
export async function removeIdleConsumers(
  redis: ScriptedRedis,
  stream: string,
  group: string,
  idleMs: number,
  logger: Logger,
  self: string,
): Promise<string[]> {
  const removed: string[] = [];
  try {
    const consumers = (await redis.xinfo('CONSUMERS', stream, group)) as unknown[][];
    for (const raw of consumers) {
      const info = pairsToObject(raw);
      const name = String(info.name);
      if (name === self || Number(info.pending) > 0 || Number(info.idle) < idleMs) continue;
      if ((await redis.nrsDeleteConsumerIfIdle(stream, group, name)) === 1) removed.push(name);
    }
    if (removed.length > 0) {
      logger.log(`Removed idle consumers without pending entries from "${stream}" group "${group}": ${removed.join(', ')}.`);
    }
  } catch (err) {
    logger.warn(`Idle-consumer cleanup of "${stream}" group "${group}" failed: ${(err as Error).message}`);
  }
  return removed;
}
