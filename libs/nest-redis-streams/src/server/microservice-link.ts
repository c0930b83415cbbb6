import { NestMicroservice } from '@nestjs/microservices';

/**
 * A transport strategy is handed its handlers, never the application that made them, yet direct
 * handlers need that application's container and enhancer configuration. Nest registers a
 * strategy's handlers in `NestMicroservice.registerListeners()` in every flow
 * (`createMicroservice().listen()`, `init()`, `connectMicroservice()` with or without deferred
 * initialisation), so that method is wrapped, once per process, to hand each strategy that
 * accepts it the microservice that registered its handlers. The symbol is global (`Symbol.for`),
 * so the ESM and CommonJS builds of this library, loaded side by side, wrap it once and are both
 * told. Nothing else changes: the original runs first, with the same arguments and result.
 */
export const ATTACH_MICROSERVICE = Symbol.for('nest-redis-streams.attachMicroservice');
const WRAPPED = Symbol.for('nest-redis-streams.registerListenersWrapped');

type RegisterListeners = (this: unknown, ...args: unknown[]) => unknown;

/** A strategy that wants to know its microservice. */
export interface MicroserviceAware {
  [ATTACH_MICROSERVICE](microservice: object): void;
}

/**
 * Wraps `NestMicroservice.prototype.registerListeners` (idempotent). Returns false when this
 * Nest version has no such method to wrap: the server then cannot find its application itself.
 */
export function linkMicroservices(prototype: object | undefined = NestMicroservice?.prototype): boolean {
  const target = prototype as Record<string | symbol, unknown> | undefined;
  const original = target?.registerListeners as (RegisterListeners & { [WRAPPED]?: true }) | undefined;
  if (typeof original !== 'function') return false;
  if (original[WRAPPED]) return true;
  const wrapped = function registerListeners(this: unknown, ...args: unknown[]) {
    const result = original.apply(this, args);
    // Nest 11 and 12 name the strategy `serverInstance`; earlier versions `server`.
    const holder = this as { serverInstance?: Partial<MicroserviceAware>; server?: Partial<MicroserviceAware> } | null;
    const strategy = holder?.serverInstance ?? holder?.server;
    if (typeof strategy?.[ATTACH_MICROSERVICE] === 'function') strategy[ATTACH_MICROSERVICE](this as object);
    return result;
  };
  Object.defineProperty(wrapped, WRAPPED, { value: true });
  target![`registerListeners`] = wrapped;
  return true;
}
