import { Module } from '@nestjs/common';
import type { RedisStreamsClientOptions } from '../client/client-options.interface.js';
import { RedisStreamsClient } from '../client/redis-streams.client.js';
import { StreamTrimmer } from '../trim/stream-trimmer.service.js';
import { REDIS_STREAMS_CLIENT } from './redis-streams.constants.js';
import { ConfigurableRedisStreamsModule, REDIS_STREAMS_OPTIONS } from './redis-streams.module-definition.js';

/**
 * Provides one RedisStreamsClient (inject it with `@InjectRedisStreamsClient()`) and a
 * StreamTrimmer on its connection. `RedisStreamsModule.forRoot(options)` or
 * `forRootAsync({ imports, inject, useFactory | useClass | useExisting })`, with `isGlobal`.
 * The client connects on first use and is closed on application shutdown. For several clients,
 * use `ClientsModule.register([{ name, customClass: RedisStreamsClient, options }])`.
 *
 * @example
 * ```ts
 * @Module({ imports: [RedisStreamsModule.forRoot({ connection: process.env.REDIS_URL })] })
 * export class OrdersModule {}
 *
 * @Injectable()
 * export class OrdersService {
 *   constructor(@InjectRedisStreamsClient() private readonly streams: RedisStreamsClient) {}
 *   place(order: Order) {
 *     return lastValueFrom(this.streams.emit('orders', order));
 *   }
 * }
 * ```
 * @publicApi
 */
@Module({
  providers: [
    {
      provide: REDIS_STREAMS_CLIENT,
      useFactory: (options: RedisStreamsClientOptions) => new RedisStreamsClient(options),
      inject: [REDIS_STREAMS_OPTIONS],
    },
    {
      provide: StreamTrimmer,
      useFactory: (client: RedisStreamsClient) => client.streamTrimmer,
      inject: [REDIS_STREAMS_CLIENT],
    },
  ],
  exports: [REDIS_STREAMS_CLIENT, StreamTrimmer],
})
export class RedisStreamsModule extends ConfigurableRedisStreamsModule {}
