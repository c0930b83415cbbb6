import { type CallHandler, type ExecutionContext, Inject, Injectable, type NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { from, lastValueFrom, type Observable } from 'rxjs';
import { RedisStreamsBatchContext } from '../context/redis-streams-batch.context.js';
import { RedisStreamsContext } from '../context/redis-streams.context.js';
import { IDEMPOTENCY_STORE, IDEMPOTENT_OPTIONS } from './idempotency.constants.js';
import type { IdempotencyOptions } from './idempotency-options.interface.js';
import type { IdempotencyStore } from './idempotency-store.interface.js';
import { runOnce } from './run-once.js';

const IDEMPOTENT_ON_BATCH = (owner: string, method: string) =>
  `@Idempotent() on ${owner}.${method}, a batch handler: it guards single entries and cannot skip part of a batch. ` +
  'Remove it and guard each entry inside the handler: inbox.run/record(tx, batch.getEntry(i), ...) or runOnce(store, batch.getEntry(i), ...).';

/**
 * Applies `runOnce` around handlers marked `@Idempotent()`, keyed by the handler's
 * `Class.method` unless the options name it: two guarded handlers of one stream and group are
 * two effects, and each must run once per event.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  constructor(
    @Inject(IDEMPOTENCY_STORE) private readonly store: IdempotencyStore,
    private readonly reflector: Reflector,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const ctx = context.switchToRpc().getContext();
    // One guard cannot skip part of a call: a batch's entries are guarded one by one inside it.
    if (ctx instanceof RedisStreamsBatchContext)
      throw new Error(IDEMPOTENT_ON_BATCH(context.getClass().name, context.getHandler().name));
    if (!(ctx instanceof RedisStreamsContext)) return next.handle();
    const options = this.reflector.get<IdempotencyOptions>(IDEMPOTENT_OPTIONS, context.getHandler()) ?? {};
    const handler = options.handler ?? `${context.getClass().name}.${context.getHandler().name}`;
    const effect = () => lastValueFrom(next.handle(), { defaultValue: undefined });
    return from(runOnce(this.store, ctx, effect, { ...options, handler }));
  }
}
