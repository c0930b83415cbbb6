import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { StreamOperations } from '../operations/stream-operations.js';
import { connectOrExplain } from '../redis/connect.js';
import { createRedisConnection } from '../redis/connection.factory.js';
import type { RedisStreamsConsoleOptions } from './console-options.interface.js';
import { CONSOLE_OPTIONS } from './console.constants.js';

/** The console's own Redis connection and operations service; closed with the app. */
@Injectable()
export class ConsoleConnection implements OnApplicationShutdown {
  readonly redis: Redis;
  readonly ops: StreamOperations;
  /** Resolves once connected; fails with where Redis was expected. */
  readonly connecting: Promise<void>;

  constructor(@Inject(CONSOLE_OPTIONS) options: RedisStreamsConsoleOptions) {
    this.redis = createRedisConnection(options.connection, 'console');
    this.ops = new StreamOperations(this.redis, {
      streams: options.streams,
      auditStream: options.auditStream,
      auditMaxLen: options.auditMaxLen,
      auditRefusalsMaxLen: options.auditRefusalsMaxLen,
      stalledAfterMs: options.stalledAfterMs,
    });
    this.connecting = connectOrExplain(this.redis, options.connection);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.connecting.catch(() => undefined);
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
