import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js';
import { BaseRpcExceptionFilter } from '@nestjs/microservices';
import { isObservable, type Observable } from 'rxjs';
import { catchError } from 'rxjs/operators';
import type { RedisStreamsContext } from '../context/redis-streams.context.js';
import { type MethodCall, intercepted, ownInterceptor } from './own-interceptor.js';
import { RedisStreamsExceptionFilter } from '../filters/redis-streams-exception.filter.js';

/**
 * The default fast path (see handler-paths.ts): an event handler with nothing bound to it is
 * called as its controller method, skipping Nest's per-message pipeline (about 3.4 KB of
 * promises, closures and argument arrays per entry). Only what can be proved to be a bare call
 * qualifies; everything else keeps Nest's pipeline. The metadata keys are Nest's
 * (`@nestjs/common/constants`, `@nestjs/microservices/constants`), stable since Nest 5.
 */
const ENHANCER_KEYS = ['__guards__', '__pipes__'] as const;
const INTERCEPTORS = '__interceptors__';
const FILTERS = '__exceptionFilters__';
const ROUTE_ARGS = '__routeArguments__';
const PATTERN = 'microservices:pattern';
const PATTERN_HANDLER = 'microservices:handler_type';
const TRANSPORT = 'microservices:transport';
/** Nest's PatternHandler.EVENT and RpcParamtype.PAYLOAD / CONTEXT. */
const EVENT_HANDLER = 2;
const PAYLOAD = 3;
const CONTEXT = 6;

/** A handler called without Nest's pipeline: what it returns is what Nest's would resolve to. */
export type DirectHandler = (data: unknown, ctx: RedisStreamsContext) => unknown;

/** Why a handler keeps Nest's pipeline, or the direct call that replaces it. */
export type DirectResolution = { direct: DirectHandler } | { reason: string };

interface GlobalConfig {
  [getter: string]: unknown;
}
interface InstanceWrapperLike {
  instance: unknown;
  isDependencyTreeStatic(): boolean;
}
interface ModuleLike {
  controllers: Map<unknown, InstanceWrapperLike>;
  injectables?: Map<unknown, InstanceWrapperLike>;
}
interface ContainerLike {
  applicationConfig?: GlobalConfig;
  getModules(): Map<string, ModuleLike>;
}

/** App-wide enhancers, all of which apply to every handler; each must be empty. */
const GLOBAL_GETTERS = [
  'getGlobalFilters',
  'getGlobalPipes',
  'getGlobalInterceptors',
  'getGlobalGuards',
  'getGlobalRequestFilters',
  'getGlobalRequestPipes',
  'getGlobalRequestInterceptors',
  'getGlobalRequestGuards',
];

/**
 * The microservice's modules and its own enhancer configuration (fields its type keeps private or
 * protected). A hybrid app's microservice has a configuration of its own unless it inherits the
 * HTTP app's, so it is read from the microservice, never from the container. Null when the shape
 * is not the one checked here (not a microservice, another Nest version): nothing runs direct.
 */
export function containerOf(app: unknown): ContainerLike | null {
  const { container, applicationConfig: config } = (app ?? {}) as {
    container?: Partial<ContainerLike>;
    applicationConfig?: GlobalConfig;
  };
  if (typeof container?.getModules !== 'function' || !config) return null;
  if (!GLOBAL_GETTERS.every((getter) => typeof config[getter] === 'function')) return null;
  return { applicationConfig: config, getModules: () => container.getModules!() };
}

/**
 * This library's own filter (docs/handlers.md registers it app-wide or per controller) is the one
 * filter the direct call reproduces; a subclass or any other filter keeps Nest's pipeline.
 */
const isOwnFilter = (filter: unknown) =>
  filter === RedisStreamsExceptionFilter || (filter as object | null)?.constructor === RedisStreamsExceptionFilter;

/** The app-wide enhancers bound, by getter name (empty: none). Pre-request hooks are Nest 12's. */
export function globalEnhancers(container: ContainerLike): string[] {
  const config = container.applicationConfig!;
  const getters =
    typeof config.getGlobalPreRequestHooks === 'function' ? [...GLOBAL_GETTERS, 'getGlobalPreRequestHooks'] : GLOBAL_GETTERS;
  return getters.filter((getter) => {
    const bound = ((config[getter] as () => unknown[])() ?? []) as unknown[];
    return getter === 'getGlobalFilters' ? !bound.every(isOwnFilter) : bound.length > 0;
  });
}

/** Whether RedisStreamsExceptionFilter is registered app-wide. */
const ownFilterGlobally = (container: ContainerLike) =>
  ((container.applicationConfig!.getGlobalFilters as () => unknown[])() ?? []).length > 0;

interface Candidate {
  module: ModuleLike;
  instance: object;
  methodKey: string;
  isStatic: boolean;
}

/** Every event-handler method of every controller that declares `matches(pattern)`. */
function candidates(container: ContainerLike, matches: (pattern: unknown, extras: unknown) => boolean, transportId: unknown) {
  const found: Candidate[] = [];
  for (const module of container.getModules().values()) {
    for (const wrapper of module.controllers.values()) {
      const instance = wrapper.instance;
      if (typeof instance !== 'object' || instance === null) continue;
      for (const methodKey of methodNames(Object.getPrototypeOf(instance) as object)) {
        const method = (instance as Record<string, unknown>)[methodKey];
        if (typeof method !== 'function' || Reflect.getMetadata(PATTERN_HANDLER, method) !== EVENT_HANDLER) continue;
        const transport: unknown = Reflect.getMetadata(TRANSPORT, method);
        if (transport !== undefined && transportId !== undefined && transport !== transportId) continue;
        const patterns = (Reflect.getMetadata(PATTERN, method) as unknown[] | undefined) ?? [];
        const extras: unknown = Reflect.getMetadata('microservices:pattern_extras', method);
        if (patterns.some((pattern) => matches(pattern, extras))) {
          found.push({ module, instance, methodKey, isStatic: wrapper.isDependencyTreeStatic() });
        }
      }
    }
  }
  return found;
}

function methodNames(prototype: object | null): Set<string> {
  const names = new Set<string>();
  for (let proto = prototype; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto) as object | null) {
    for (const name of Object.getOwnPropertyNames(proto)) if (name !== 'constructor') names.add(name);
  }
  return names;
}

/**
 * Finds the one controller method behind a stream and group and proves it bare: a singleton
 * (not request-scoped), no guard, pipe, interceptor or exception filter on the method or its
 * class but this library's own (`@Idempotent()`'s interceptor, RedisStreamsExceptionFilter,
 * both reproduced), parameters that are only `@Payload()` (optionally a property) and `@Ctx()`,
 * and no app-wide enhancer (checked by the caller once for all handlers).
 */
export function resolveDirect(
  container: ContainerLike,
  matches: (pattern: unknown, extras: unknown) => boolean,
  transportId: unknown,
): DirectResolution {
  const found = candidates(container, matches, transportId);
  if (found.length !== 1) return { reason: `${found.length} controller methods handle it` };
  const { module, instance, methodKey, isStatic } = found[0];
  if (!isStatic) return { reason: 'its controller is request-scoped' };
  const method = (instance as Record<string, (...args: unknown[]) => unknown>)[methodKey];
  const owner = instance.constructor;
  for (const key of ENHANCER_KEYS) {
    if (bound(Reflect.getMetadata(key, method)) || bound(Reflect.getMetadata(key, owner))) {
      return { reason: `${key.replaceAll('_', '')} bound to ${owner.name}.${methodKey}` };
    }
  }
  // Nest applies the class's enhancers, then the method's.
  const boundTo = (key: string) => [
    ...((Reflect.getMetadata(key, owner) as unknown[] | undefined) ?? []),
    ...((Reflect.getMetadata(key, method) as unknown[] | undefined) ?? []),
  ];
  const interceptor = ownInterceptor(boundTo(INTERCEPTORS), module.injectables, `${owner.name}.${methodKey}`);
  if (typeof interceptor === 'string') return { reason: interceptor };
  const filters = boundTo(FILTERS);
  if (!filters.every(isOwnFilter)) return { reason: `an exception filter bound to ${owner.name}.${methodKey}` };
  const params = parameters(owner, methodKey);
  if (typeof params === 'string') return { reason: params };
  const filter = filters.length > 0 || ownFilterGlobally(container) ? ownFilter : defaultFilter;
  const call = methodCall(instance, method, params);
  return { direct: directCall(interceptor ? intercepted(interceptor, owner, method, call) : call, filter) };
}

const bound = (list: unknown) => Array.isArray(list) && list.length > 0;

type Param = { index: number; type: typeof PAYLOAD | typeof CONTEXT; data?: string };

/** The method's parameters as Nest's RPC params factory would fill them, or why not supported. */
function parameters(owner: object, methodKey: string): Param[] | string {
  const metadata = Reflect.getMetadata(ROUTE_ARGS, owner, methodKey) as
    Record<string, { index: number; data?: unknown; pipes?: unknown[] }> | undefined;
  // No parameter decorator: Nest passes (payload, context).
  if (metadata === undefined)
    return [
      { index: 0, type: PAYLOAD },
      { index: 1, type: CONTEXT },
    ];
  const params: Param[] = [];
  for (const [key, { index, data, pipes }] of Object.entries(metadata)) {
    const type = Number(key.split(':')[0]);
    if (bound(pipes)) return `a pipe bound to parameter ${index} of ${methodKey}`;
    if (type !== PAYLOAD && type !== CONTEXT) return `parameter ${index} of ${methodKey} has a custom decorator`;
    if (data !== undefined && (type !== PAYLOAD || typeof data !== 'string')) return `parameter ${index} of ${methodKey}`;
    params.push({ index, type, data: data as string | undefined });
  }
  return params;
}

const value = (param: Param, data: unknown, ctx: RedisStreamsContext): unknown =>
  param.type === CONTEXT ? ctx : param.data ? (data as Record<string, unknown> | null | undefined)?.[param.data] : data;

/** Nest's default exception filter (applied when no filter is bound), and this library's. */
const defaultFilter = new BaseRpcExceptionFilter();
const ownFilter = new RedisStreamsExceptionFilter();

/** The method called with the arguments Nest would pass. */
function methodCall(instance: object, method: (...args: unknown[]) => unknown, params: Param[]): MethodCall {
  const length = params.reduce((max, p) => Math.max(max, p.index + 1), 0);
  const [first, second] = [...params].sort((a, b) => a.index - b.index);
  // The usual shapes, (payload) and (payload, context), without an argument array per entry.
  const call =
    length === 1 && params.length === 1
      ? (data: unknown, ctx: RedisStreamsContext) => method.call(instance, value(first, data, ctx))
      : length === 2 && params.length === 2
        ? (data: unknown, ctx: RedisStreamsContext) => method.call(instance, value(first, data, ctx), value(second, data, ctx))
        : (data: unknown, ctx: RedisStreamsContext) => {
            const args: unknown[] = new Array(length).fill(undefined);
            for (const param of params) args[param.index] = value(param, data, ctx);
            return method.apply(instance, args);
          };
  return call;
}

/**
 * The call with a failure turned into what the filter Nest would apply makes of it (its
 * default: logged, "Internal server error"; this library's: the original error), also when it
 * arrives later through a promise or an Observable: the transport sees what it saw through Nest's
 * pipeline.
 */
function directCall(call: MethodCall, filter: BaseRpcExceptionFilter): DirectHandler {
  return (data, ctx) => {
    let result: unknown;
    try {
      result = call(data, ctx);
    } catch (err) {
      return failed(filter, err, data, ctx);
    }
    // Closures only on the paths that need one: a plain return allocates nothing here.
    if (result instanceof Promise) return result.then(undefined, (err: unknown) => failed(filter, err, data, ctx));
    if (isObservable(result)) return result.pipe(catchError((err: unknown) => failed(filter, err, data, ctx)));
    // Nest awaits whatever the method returns, so another thenable settles like a promise.
    if (typeof (result as PromiseLike<unknown> | null)?.then === 'function') {
      return Promise.resolve(result).then(undefined, (err: unknown) => failed(filter, err, data, ctx));
    }
    return result;
  };
}

/** What the filter makes of a failure, given the host Nest's RpcProxy gives its filters. */
function failed(filter: BaseRpcExceptionFilter, err: unknown, data: unknown, ctx: RedisStreamsContext): Observable<never> {
  const host = new ExecutionContextHost([data, ctx]);
  host.setType('rpc');
  return filter.catch(err, host) as Observable<never>;
}
