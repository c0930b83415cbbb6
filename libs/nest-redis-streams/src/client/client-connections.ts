import type { Redis, RedisOptions } from 'ioredis';
import { defaultConsumerName } from '../constants.js';
import type { RedisConnectionOptions } from '../interfaces/connection-options.interface.js';
import { connectOrExplain, quitWithin } from '../redis/connect.js';
import { createRedisConnection } from '../redis/connection.factory.js';
import { ConnectionFailedError } from './errors/connection-failed.error.js';

type Listener = (...args: unknown[]) => void;

/**
 * The client's Redis connections (commands, and the reply reader's): opened with the listeners
 * registered through `on()`, present and future, and closed together.
 */
export class ClientConnections {
  private readonly listeners: Array<[event: string, listener: Listener]> = [];
  private readonly connections = new Set<Redis>();

  constructor(private readonly connection: RedisConnectionOptions | undefined) {}

  /** Forwards `event` of every connection, open now or later, to `listener`. */
  on(event: string, listener: Listener): void {
    this.listeners.push([event, listener]);
    for (const connection of this.connections) connection.on(event, listener);
  }

  /** Opens a connection named for its `role`; a failure becomes a ConnectionFailedError. */
  async open(role: string, overrides: RedisOptions): Promise<Redis> {
    const redis = createRedisConnection(this.connection, `client:${role}:${defaultConsumerName()}`, {
      // After a refused connect ioredis arms a timer to destroy a socket that is already closed;
      // its default 2 s would keep a process (or a test run) alive that long after the failure.
      disconnectTimeout: 200,
      ...overrides,
    });
    for (const [event, listener] of this.listeners) redis.on(event, listener);
    this.connections.add(redis);
    try {
      await connectOrExplain(redis, this.connection);
    } catch (err) {
      this.connections.delete(redis);
      throw new ConnectionFailedError((err as Error).message, { cause: err });
    }
    return redis;
  }

  /** Disconnects and forgets one connection (a reply reader that failed to start). */
  drop(redis: Redis): void {
    this.connections.delete(redis);
    redis.disconnect();
  }

  /** Disconnects every connection but `commands`, which is quit (its last writes are answered). */
  async closeAll(commands: Redis | null | undefined): Promise<void> {
    for (const connection of this.connections) {
      if (connection === commands) continue;
      connection.disconnect();
    }
    if (commands) await quitWithin(commands);
    this.connections.clear();
  }
}
