import type { MessageHandler } from '@nestjs/microservices';
import { HANDLER_PATH_REASONS, decideHandlerPaths, handlerPathLine } from './handler-paths.js';
import type { HandlerRegistration } from './handler-registry.js';

const handler = (() => undefined) as unknown as MessageHandler;
const registration = (pattern: string, extra: Partial<HandlerRegistration> = {}, batch = false) =>
  ({ pattern, group: 'nest', kind: 'event', handler, options: batch ? { batch: {} } : {}, ...extra }) as HandlerRegistration;

/** A microservice with no controllers and no enhancers, as containerOf() reads one. */
const emptyMicroservice = () => {
  const none = () => [];
  return {
    container: { getModules: () => new Map() },
    applicationConfig: Object.fromEntries(
      [
        'Filters',
        'Pipes',
        'Interceptors',
        'Guards',
        'RequestFilters',
        'RequestPipes',
        'RequestInterceptors',
        'RequestGuards',
      ].map((kind) => [`getGlobal${kind}`, none]),
    ),
  };
};

const decide = (registrations: HandlerRegistration[], enabled = true, app: unknown = emptyMicroservice()) =>
  decideHandlerPaths({ enabled, app, registrations, registrationOf: () => undefined, transportId: undefined });

describe('decideHandlerPaths', () => {
  it('keeps batch and request handlers on Nest’s pipeline, saying why', () => {
    const { direct, paths } = decide([registration('batched', {}, true), registration('quotes', { kind: 'message' })]);
    expect(direct.size).toBe(0);
    expect(paths).toEqual([
      { pattern: 'batched', group: 'nest', path: 'pipeline', reason: HANDLER_PATH_REASONS.batch },
      { pattern: 'quotes', group: 'nest', path: 'pipeline', reason: HANDLER_PATH_REASONS.request },
    ]);
  });

  it('names the option when it is off, before anything else', () => {
    expect(decide([registration('orders', {}, true)], false).paths[0].reason).toBe(HANDLER_PATH_REASONS.off);
  });

  it('keeps a handler no controller method declares on the pipeline', () => {
    expect(decide([registration('orders')]).paths[0].reason).toBe('0 controller methods handle it');
  });

  it('writes one log line per handler, naming its stream, group and path', () => {
    expect(handlerPathLine({ pattern: 'orders', group: 'billing', path: 'direct' })).toBe(
      'Handler of orders (group billing) runs direct: nothing is bound to it.',
    );
    expect(handlerPathLine({ pattern: 'orders', group: 'billing', path: 'pipeline', reason: HANDLER_PATH_REASONS.off })).toBe(
      "Handler of orders (group billing) runs through Nest's pipeline: the server option directHandlers is false.",
    );
  });
});
