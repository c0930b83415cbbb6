import type { NestInterceptor, Type } from '@nestjs/common';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js';
import { defer, from, isObservable, type Observable } from 'rxjs';
import type { RedisStreamsContext } from '../context/redis-streams.context.js';
import { IdempotencyInterceptor } from '../idempotency/idempotency.interceptor.js';

/** A controller method's call with the arguments Nest would pass. */
export type MethodCall = (data: unknown, ctx: RedisStreamsContext) => unknown;

interface InjectableLike {
  instance: unknown;
  isDependencyTreeStatic(): boolean;
}

/**
 * The interceptor instance Nest would apply when `bound` (the class's then the method's
 * `@UseInterceptors()`) is only this library's own (`@Idempotent()` binds IdempotencyInterceptor
 * by class; Nest takes its instance from the controller module's injectables), or why the
 * handler keeps Nest's pipeline. Null when nothing is bound.
 */
export function ownInterceptor(
  bound: unknown[],
  injectables: Map<unknown, InjectableLike> | undefined,
  where: string,
): NestInterceptor | string | null {
  if (bound.length === 0) return null;
  const [interceptor] = bound;
  const own =
    bound.length === 1 &&
    (interceptor === IdempotencyInterceptor || (interceptor as object | null)?.constructor === IdempotencyInterceptor);
  if (!own) return `interceptors bound to ${where}`;
  if (typeof interceptor === 'object') return interceptor as NestInterceptor;
  const wrapper = injectables?.get(IdempotencyInterceptor);
  if (!wrapper?.instance || !wrapper.isDependencyTreeStatic()) return `the IdempotencyInterceptor of ${where} is not a singleton`;
  return wrapper.instance as NestInterceptor;
}

/**
 * The call run inside the interceptor as Nest's interceptors consumer runs it: the interceptor
 * gets an rpc execution context of (payload, context), the class and the method, and `handle()`
 * defers the call and turns what it returns into an Observable (a promise or thenable resolved,
 * a plain value emitted once). Failures reach the caller's exception filter through the
 * Observable `intercept()` returns.
 */
export function intercepted(
  interceptor: NestInterceptor,
  owner: object,
  method: (...args: unknown[]) => unknown,
  call: MethodCall,
): MethodCall {
  const observe = (result: unknown): Observable<unknown> => (isObservable(result) ? result : from(Promise.resolve(result)));
  return (data, ctx) => {
    const host = new ExecutionContextHost([data, ctx], owner as Type, method);
    host.setType('rpc');
    return interceptor.intercept(host, { handle: () => defer(() => observe(call(data, ctx))) });
  };
}
