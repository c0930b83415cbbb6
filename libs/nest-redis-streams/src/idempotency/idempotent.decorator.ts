import { SetMetadata, UseInterceptors, applyDecorators } from '@nestjs/common';
import { IDEMPOTENT_OPTIONS } from './idempotency.constants.js';
import { IdempotencyInterceptor } from './idempotency.interceptor.js';
import type { IdempotencyOptions } from './idempotency-options.interface.js';

/**
 * Runs the handler at most once per business event, stream, consumer group and handler (its
 * `Class.method`, or `options.handler`). Needs an `IDEMPOTENCY_STORE` provider (e.g.
 * `new RedisIdempotencyStore(redis)`) in the module.
 */
export const Idempotent = (options: IdempotencyOptions = {}) =>
  applyDecorators(SetMetadata(IDEMPOTENT_OPTIONS, options), UseInterceptors(IdempotencyInterceptor));
