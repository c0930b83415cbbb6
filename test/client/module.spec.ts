import { Inject, Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ClientProxy, ClientsModule } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import {
  InjectRedisStreamsClient,
  REDIS_STREAMS_CLIENT,
  RedisStreamsClient,
  type RedisStreamsClientOptions,
  RedisStreamsModule,
  type RedisStreamsOptionsFactory,
  StreamTrimmer,
} from 'nest-redis-streams';
import { redisUrl, testContext, unique } from '../support/helpers.js';

const CONFIG = Symbol('CONFIG');

@Module({
  providers: [{ provide: CONFIG, useFactory: () => ({ url: redisUrl(), prefix: `${unique('mod')}:` }) }],
  exports: [CONFIG],
})
class ConfigModule {}

@Injectable()
class OrdersService {
  constructor(
    @InjectRedisStreamsClient() readonly client: RedisStreamsClient,
    readonly trimmer: StreamTrimmer,
  ) {}
}

describe('RedisStreamsModule', () => {
  const { redis } = testContext();

  it('forRootAsync with useFactory injects the client and the trimmer, and closes the client on shutdown', async () => {
    @Module({
      imports: [
        RedisStreamsModule.forRootAsync({
          imports: [ConfigModule],
          inject: [CONFIG],
          useFactory: (config: { url: string; prefix: string }) => ({ connection: config.url, keyPrefix: config.prefix }),
        }),
      ],
      providers: [OrdersService],
    })
    class AppModule {}
    const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
    const { client, trimmer } = app.get(OrdersService);
    expect(client).toBeInstanceOf(RedisStreamsClient);
    expect(app.get(REDIS_STREAMS_CLIENT)).toBe(client);
    const stream = client.streamOf('orders');
    expect(stream).toMatch(/^t:mod:.*:orders$/);

    await lastValueFrom(client.emit('orders', { id: 1 }));
    expect(await redis.xlen(stream)).toBe(1);
    expect((await trimmer.trim(stream, { maxLen: 0 })).method).toMatch(/acked|floor/);
    const close = jest.spyOn(client, 'close');

    await app.close();
    expect(close).toHaveBeenCalledTimes(1);
    expect(() => client.unwrap()).toThrow(/not connected yet/);
  });

  it('forRoot with isGlobal serves feature modules that do not import it', async () => {
    @Module({ providers: [OrdersService], exports: [OrdersService] })
    class FeatureModule {}
    @Module({ imports: [RedisStreamsModule.forRoot({ connection: redisUrl(), isGlobal: true }), FeatureModule] })
    class AppModule {}
    const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
    const stream = unique('mod-global');
    const id = await lastValueFrom(app.get(OrdersService).client.emit(stream, 'hello'));
    expect(id).toMatch(/^\d+-\d+$/);
    await app.close();
  });

  it('forRootAsync with useClass asks the options factory', async () => {
    @Injectable()
    class StreamsConfig implements RedisStreamsOptionsFactory {
      createRedisStreamsOptions(): RedisStreamsClientOptions {
        return { connection: redisUrl(), maxPayloadBytes: 4096 };
      }
    }
    @Module({ imports: [RedisStreamsModule.forRootAsync({ useClass: StreamsConfig })], providers: [OrdersService] })
    class AppModule {}
    const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
    expect(app.get(OrdersService).client.options.maxPayloadBytes).toBe(4096);
    await app.close();
  });

  it('works as a ClientsModule custom class', async () => {
    @Injectable()
    class Publisher {
      constructor(@Inject('EVENTS') readonly client: ClientProxy) {}
    }
    @Module({
      imports: [
        ClientsModule.register([{ name: 'EVENTS', customClass: RedisStreamsClient, options: { connection: redisUrl() } }]),
      ],
      providers: [Publisher],
    })
    class AppModule {}
    const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
    const { client } = app.get(Publisher);
    expect(client).toBeInstanceOf(RedisStreamsClient);
    const stream = unique('mod-clients');
    await lastValueFrom(client.emit(stream, { ok: true }));
    expect(await redis.xlen(stream)).toBe(1);
    await app.close();
  });
});
