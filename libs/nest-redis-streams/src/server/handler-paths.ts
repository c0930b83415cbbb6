import type { MessageHandler } from '@nestjs/microservices';
import { type DirectHandler, containerOf, globalEnhancers, resolveDirect } from './direct-handlers.js';
import type { HandlerRegistration } from './handler-registry.js';

/**
 * Which way one handler runs, decided at `listen()`: `direct` (its controller method is called
 * as Nest's pipeline would call it, without the pipeline) or `pipeline` (Nest's per-message
 * pipeline, with the reason it cannot be skipped).
 */
export interface HandlerPath {
  /** The stream the handler was declared with (without key prefix). */
  readonly pattern: string;
  readonly group: string;
  readonly path: 'direct' | 'pipeline';
  /** Why the handler keeps Nest's pipeline; absent for `direct`. */
  readonly reason?: string;
}

/** What the server knows when it decides, at listen(). */
export interface HandlerPathInputs {
  /** The `directHandlers` option. */
  readonly enabled: boolean;
  /** The microservice that registered the handlers (or what was passed to useDirectHandlers()). */
  readonly app: unknown;
  readonly registrations: Iterable<HandlerRegistration>;
  /** The registry's lookup of a decorator's pattern and extras (the decision that placed a handler). */
  readonly registrationOf: (pattern: unknown, extras: unknown) => HandlerRegistration | undefined;
  readonly transportId: unknown;
}

export const HANDLER_PATH_REASONS = {
  off: 'the server option directHandlers is false',
  noApp:
    'the Nest microservice that registered it could not be reached ' +
    '(pass it with server.useDirectHandlers(app) before listen())',
  unreadable: 'the Nest application could not be read (not a NestMicroservice of a Nest version this library knows)',
  batch: "it is a batch handler (batches always use Nest's pipeline)",
  request: "it is a @MessagePattern handler (requests always use Nest's pipeline)",
  shared: 'several handlers share its stream and group',
  globals: (getters: string[]) => `app-wide enhancers are bound (${getters.join(', ')})`,
};

/** The start-up log line of a handler's path. */
export function handlerPathLine({ pattern, group, path, reason }: HandlerPath): string {
  return path === 'direct'
    ? `Handler of ${pattern} (group ${group}) runs direct: nothing is bound to it.`
    : `Handler of ${pattern} (group ${group}) runs through Nest's pipeline: ${reason}.`;
}

/**
 * The path of every handler and the direct call of each that runs direct. A handler runs direct
 * only when that is provably the same as Nest's pipeline: an event handler alone on its stream
 * and group, a singleton controller, nothing bound to it or app-wide but this library's own
 * exception filter, and only `@Payload()` / `@Ctx()` parameters (see resolveDirect).
 */
export function decideHandlerPaths(inputs: HandlerPathInputs): {
  direct: Map<MessageHandler, DirectHandler>;
  paths: HandlerPath[];
} {
  const direct = new Map<MessageHandler, DirectHandler>();
  const paths: HandlerPath[] = [];
  const container = inputs.enabled && inputs.app ? containerOf(inputs.app) : null;
  const globals = container ? globalEnhancers(container) : [];
  for (const registration of inputs.registrations) {
    const { pattern, group } = registration;
    let reason: string;
    if (!inputs.enabled) reason = HANDLER_PATH_REASONS.off;
    else if (registration.options.batch) reason = HANDLER_PATH_REASONS.batch;
    else if (registration.kind !== 'event') reason = HANDLER_PATH_REASONS.request;
    else if (!inputs.app) reason = HANDLER_PATH_REASONS.noApp;
    else if (!container) reason = HANDLER_PATH_REASONS.unreadable;
    else if (globals.length > 0) reason = HANDLER_PATH_REASONS.globals(globals);
    else if (registration.handler.next) reason = HANDLER_PATH_REASONS.shared;
    else {
      const matches = (p: unknown, extras: unknown) => inputs.registrationOf(p, extras) === registration;
      const resolved = resolveDirect(container, matches, inputs.transportId);
      if ('direct' in resolved) {
        direct.set(registration.handler, resolved.direct);
        paths.push({ pattern, group, path: 'direct' });
        continue;
      }
      reason = resolved.reason;
    }
    paths.push({ pattern, group, path: 'pipeline', reason });
  }
  return { direct, paths };
}
