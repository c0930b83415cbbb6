import type { Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import type { RedisConnectionOptions } from '../interfaces/connection-options.interface.js';
import { aclUserOf, isPermissionError } from '../redis/acl-hint.js';
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
  const refused = (err: Error) => logger.warn(SERVER_MESSAGES.watchedAckRefused(aclUserOf(connection), err.message));
  // A MULTI the ACL refuses would leave the XACK sent behind it to run on its own, unwatched:
  // without MULTI and EXEC the connection is not used at all.
  try {
    await redis.call('MULTI');
    await redis.call('EXEC');
  } catch (err) {
    // Anything else (the connection dropped just then) costs only the cheap ack, never the start.
    redis.disconnect();
    if (isPermissionError(err)) refused(err as Error);
    return undefined;
  }
  return new WatchedAck(redis, refused);
}
