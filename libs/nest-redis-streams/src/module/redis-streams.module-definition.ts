import { ConfigurableModuleBuilder, type ConfigurableModuleOptionsFactory } from '@nestjs/common';
import type { RedisStreamsClientOptions } from '../client/client-options.interface.js';

/** Extra options of `forRoot`/`forRootAsync` that shape the module rather than the client. */
export interface RedisStreamsModuleExtras {
  /**
   * Register the module globally, so the client and the trimmer can be injected anywhere
   * without importing it again.
   * @default false
   */
  isGlobal?: boolean;
}

// Nest's own builder gives forRoot/forRootAsync with useFactory, useClass and useExisting, the
// same way @nestjs/common's configurable modules (and BullModule's options) work.
const definition = new ConfigurableModuleBuilder<RedisStreamsClientOptions>({ moduleName: 'RedisStreams' })
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createRedisStreamsOptions')
  .setExtras<RedisStreamsModuleExtras>({ isGlobal: false }, (module, extras) => ({ ...module, global: extras.isGlobal }))
  .build();

/** Base class that carries the generated `forRoot`/`forRootAsync`. */
export const ConfigurableRedisStreamsModule = definition.ConfigurableModuleClass;

/** Injection token of the resolved client options. */
export const REDIS_STREAMS_OPTIONS = definition.MODULE_OPTIONS_TOKEN;

/** Argument of `RedisStreamsModule.forRoot`: the client options plus `isGlobal`. */
export type RedisStreamsModuleOptions = typeof definition.OPTIONS_TYPE;

/** Argument of `RedisStreamsModule.forRootAsync`: imports, inject and one of useFactory/useClass/useExisting. */
export type RedisStreamsModuleAsyncOptions = typeof definition.ASYNC_OPTIONS_TYPE;

/** What a `useClass`/`useExisting` options provider implements. */
export type RedisStreamsOptionsFactory = ConfigurableModuleOptionsFactory<RedisStreamsClientOptions, 'createRedisStreamsOptions'>;
