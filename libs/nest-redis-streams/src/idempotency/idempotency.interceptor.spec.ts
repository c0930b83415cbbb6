import type { CallHandler, ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { of } from 'rxjs';
import { RedisStreamsBatchContext } from '../context/redis-streams-batch.context.js';
import type { BatchControl } from '../context/batch-control.interface.js';
import { IdempotencyInterceptor } from './idempotency.interceptor.js';
import type { IdempotencyStore } from './idempotency-store.interface.js';

class Ledger {
  write() {}
}

/** The part of an ExecutionContext the interceptor reads, for a call with the given context. */
function callWith(ctx: unknown): ExecutionContext {
  return {
    switchToRpc: () => ({ getContext: () => ctx, getData: () => undefined }),
    getClass: () => Ledger,
    getHandler: () => Ledger.prototype.write,
  } as unknown as ExecutionContext;
}

describe('@Idempotent() on a batch handler', () => {
  it('refuses the call with a message naming the handler and the per-entry guards to use instead', () => {
    const store = {} as IdempotencyStore;
    const interceptor = new IdempotencyInterceptor(store, new Reflector());
    const batch = new RedisStreamsBatchContext(['orders', 'ledger', 'pod-1', [], {} as BatchControl]);
    const next: CallHandler = { handle: jest.fn(() => of(undefined)) };
    expect(() => interceptor.intercept(callWith(batch), next)).toThrow(
      '@Idempotent() on Ledger.write, a batch handler: it guards single entries and cannot skip part of a batch.',
    );
    expect(next.handle).not.toHaveBeenCalled();
  });
});
