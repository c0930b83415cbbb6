import type { Logger } from '@nestjs/common';
import { pairsToObject } from '../redis/replies.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import { consumerBeatsKey } from '../keys/index.js';

/**
 * Deletes consumers of a group that have been idle longer than `idleMs`, hold no pending entries
 * and have no live beat (see consumer-beats.ts: on Redis < 7.2 a live consumer of a quiet stream
 * looks idle). The checks and the delete run in one script: deleting a consumer drops its PEL.
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
      if ((await redis.nrsDeleteConsumerIfIdle(stream, consumerBeatsKey(stream, group), group, name)) === 1) removed.push(name);
    }
    if (removed.length > 0) {
      logger.log(`Removed idle consumers without pending entries from "${stream}" group "${group}": ${removed.join(', ')}.`);
    }
  } catch (err) {
    logger.warn(`Idle-consumer cleanup of "${stream}" group "${group}" failed: ${(err as Error).message}`);
  }
  return removed;
}
