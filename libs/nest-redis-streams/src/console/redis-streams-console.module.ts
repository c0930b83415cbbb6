import { type DynamicModule, Module, type Provider } from '@nestjs/common';
import { RouterModule } from '@nestjs/core';
import { ConsoleAccessGuard } from './console-access.guard.js';
import { ConsoleApiController } from './console-api.controller.js';
import { ConsoleDeadLettersController } from './console-dead-letters.controller.js';
import { ConsoleConnection } from './console-connection.js';
import { ConsoleHeadersInterceptor } from './console-headers.interceptor.js';
import type { RedisStreamsConsoleAsyncOptions, RedisStreamsConsoleOptions } from './console-options.interface.js';
import { ConsolePageController } from './console-page.controller.js';
import { CONSOLE_DEFAULTS, CONSOLE_OPERATIONS, CONSOLE_OPTIONS } from './console.constants.js';
import { CsrfToken } from './csrf-token.js';

/**
 * Mounts the streams console (a page and its JSON API) in an HTTP app, on Express or Fastify,
 * below the app's global prefix: `<prefix>/<path>` is the page, `<prefix>/<path>/api/*` the API.
 * See docs/console-and-cli.md for its safety rules (guard, read-only, CSRF, redaction, audit).
 */
@Module({})
export class RedisStreamsConsoleModule {
  static forRoot(options: RedisStreamsConsoleOptions = {}): DynamicModule {
    return RedisStreamsConsoleModule.build(options.path, [], { provide: CONSOLE_OPTIONS, useValue: options });
  }

  static forRootAsync(options: RedisStreamsConsoleAsyncOptions): DynamicModule {
    return RedisStreamsConsoleModule.build(options.path, options.imports ?? [], {
      provide: CONSOLE_OPTIONS,
      useFactory: async (...args: never[]) => {
        const resolved = await options.useFactory(...args);
        return { ...resolved, path: options.path ?? resolved.path };
      },
      inject: options.inject ?? [],
    });
  }

  private static build(
    path: string | undefined,
    imports: NonNullable<DynamicModule['imports']>,
    optionsProvider: Provider,
  ): DynamicModule {
    const mounted = (path ?? CONSOLE_DEFAULTS.path).replace(/^\/+|\/+$/g, '');
    return {
      module: RedisStreamsConsoleModule,
      imports: [...imports, RouterModule.register([{ path: mounted, module: RedisStreamsConsoleModule }])],
      controllers: [ConsolePageController, ConsoleApiController, ConsoleDeadLettersController],
      providers: [
        optionsProvider,
        ConsoleConnection,
        {
          provide: CONSOLE_OPERATIONS,
          useFactory: async (connection: ConsoleConnection) => {
            await connection.connecting;
            return connection.ops;
          },
          inject: [ConsoleConnection],
        },
        {
          provide: CsrfToken,
          useFactory: (o: RedisStreamsConsoleOptions) => new CsrfToken(o.csrfSecret),
          inject: [CONSOLE_OPTIONS],
        },
        ConsoleAccessGuard,
        ConsoleHeadersInterceptor,
      ],
    };
  }
}
