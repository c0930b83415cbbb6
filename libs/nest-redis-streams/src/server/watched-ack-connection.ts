import type { Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import type { RedisConnectionOptions } from '../interfaces/connection-options.interface.js';
import { aclUserOf } from '../redis/acl-hint.js';
import { connectOrExplain } from '../redis/connect.js';
import { createRedisConnection, isClusterConnection } from '../redis/connection.factory.js';
import { WATCHED_ACK_CONNECTION, WatchedAck } from '../redis/watched-ack.js';
import { SERVER_MESSAGES } from './server.messages.js';

/**
 * Opens the watched-ack connection (`nrs:acks:<consumer>`) where it is of use: one node (a
 * cluster client could send the WATCH and the EXEC to different nodes across a redirect), and
 * reads stamped with the claim epoch (not `checkEveryAck`).
 */
export async function openWatchedAck(
  { connection, consumer, checkEveryAck }: { connection?: RedisConnectionOptions; consumer: string; checkEveryAck: boolean },
  logger: Pick<Logger, 'warn'>,
  prepare: (redis: Redis) => Redis,
): Promise<WatchedAck | undefined> {
  if (checkEveryAck || isClusterConnection(connection)) return undefined;
  const redis = prepare(createRedisConnection(connection, `acks:${consumer}`, WATCHED_ACK_CONNECTION));
  await connectOrExplain(redis, connection);
  return new WatchedAck(redis, (err) => logger.warn(SERVER_MESSAGES.watchedAckRefused(aclUserOf(connection), err.message)));
}
