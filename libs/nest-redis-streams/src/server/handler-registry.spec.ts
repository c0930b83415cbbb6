import type { MessageHandler } from '@nestjs/microservices';
import { InvalidOptionsError } from '../errors/invalid-options.error.js';
import type { StreamHandlerOptions } from '../interfaces/stream-handler-options.interface.js';
import { HandlerRegistry } from './handler-registry.js';
import { resolveHandlerOptions, resolveServerOptions } from './resolve-options.js';
import { streamPattern } from './stream-pattern.js';

const server = resolveServerOptions({ consumer: 'pod-1', keyPrefix: 'app:', group: 'nest' });
const handler = () => (async () => undefined) as unknown as MessageHandler;

function registry(cluster = false) {
  const resolve = jest.fn(resolveHandlerOptions);
  return { handlers: new HandlerRegistry(server, cluster, (pattern) => pattern, resolve), resolve };
}

describe('HandlerRegistry', () => {
  it("resolves a handler's options once, when it is added, however often they are read", () => {
    const { handlers, resolve } = registry();
    handlers.add('orders', handler(), true, { group: 'billing', partitions: 4 });
    handlers.add('orders', handler(), true, { group: 'billing' }); // chained: no resolution of its own
    handlers.add('payments.charge', handler(), false, {});
    expect(resolve).toHaveBeenCalledTimes(2);
    handlers.registrations();
    handlers.subscriptions();
    handlers.find('orders', { group: 'billing' });
    expect(resolve).toHaveBeenCalledTimes(2);
    expect(resolve.mock.calls.map(([, , stream]) => stream)).toEqual(['app:orders', 'app:payments.charge']);
  });

  it('gives a partitioned handler one subscription per partition, each with its dead-letter stream', () => {
    const { handlers } = registry();
    const billing = handler();
    handlers.add('orders', billing, true, { group: 'billing', partitions: 3, concurrency: 4 });
    const [registration] = handlers.registrations();
    expect(registration).toMatchObject({ pattern: 'orders', group: 'billing', stream: 'app:orders', kind: 'event' });
    expect(registration.options).toMatchObject({ group: 'billing', concurrency: 4, deadLetterStream: 'app:orders:dlq' });
    expect(
      handlers.subscriptions().map(({ stream, partition, options }) => [stream, partition, options.deadLetterStream]),
    ).toEqual([
      ['app:orders:{app:orders:0}', 0, 'app:orders:{app:orders:0}:dlq'],
      ['app:orders:{app:orders:1}', 1, 'app:orders:{app:orders:1}:dlq'],
      ['app:orders:{app:orders:2}', 2, 'app:orders:{app:orders:2}:dlq'],
    ]);
    for (const subscription of handlers.subscriptions()) {
      expect(subscription).toMatchObject({ pattern: 'orders', kind: 'event', handler: billing });
      expect(subscription.options).toMatchObject({ group: 'billing', concurrency: 4 });
    }
  });

  it.each([
    [false, { partitions: 2, batch: { maxSize: 10 }, ownership: 'exclusive' }],
    [true, { partitions: 3, orderingKey: 'id', concurrency: 8, group: 'billing' }],
  ] as Array<[boolean, StreamHandlerOptions]>)(
    'gives each partition the options a resolution for its own stream would (cluster: %s)',
    (cluster, extras) => {
      const { handlers } = registry(cluster);
      handlers.add('orders', handler(), true, extras);
      expect(handlers.subscriptions()).toHaveLength(extras.partitions!);
      for (const { stream, options } of handlers.subscriptions()) {
        expect(options).toEqual(resolveHandlerOptions(server, extras, stream, cluster));
      }
    },
  );

  it('keeps an unpartitioned handler to its one stream, with the options it resolved', () => {
    const { handlers } = registry();
    handlers.add('orders', handler(), false, { deadLetterStream: 'app:parked' });
    const [registration] = handlers.registrations();
    expect(registration.subscriptions).toEqual([
      {
        pattern: 'orders',
        stream: 'app:orders',
        partition: 0,
        kind: 'message',
        handler: registration.handler,
        options: registration.options,
      },
    ]);
    expect(registration.options).toMatchObject({ group: 'nest', deadLetterStream: 'app:parked' });
  });

  it('keeps the same pattern in two groups apart: two registrations, neither chained to the other', () => {
    const { handlers } = registry();
    const [billing, inventory] = [handler(), handler()];
    handlers.add('orders', billing, true, { group: 'billing' });
    handlers.add(streamPattern('orders'), inventory, true, { group: 'inventory', concurrency: 2 });
    const registrations = handlers.registrations();
    expect(registrations.map(({ group, handler: h, options }) => [group, h, options.concurrency])).toEqual([
      ['billing', billing, 1],
      ['inventory', inventory, 2],
    ]);
    expect(billing.next).toBeUndefined();
    expect(inventory.next).toBeUndefined();
    expect(handlers.find(streamPattern('orders'), { group: 'billing' })).toBe(registrations[0]);
    expect(handlers.find('orders', { group: 'inventory' })).toBe(registrations[1]);
    expect(handlers.find('orders', undefined)).toBeUndefined();
  });

  it("chains event handlers of one stream and group, with the first one's options", () => {
    const { handlers } = registry();
    const [first, second] = [handler(), handler()];
    handlers.add('orders', first, true, { concurrency: 3 });
    handlers.add('orders', second, true, { concurrency: 9 });
    const [registration] = handlers.registrations();
    expect(handlers.registrations()).toHaveLength(1);
    expect(registration.handler).toBe(first);
    expect(first.next).toBe(second);
    expect(registration.options.concurrency).toBe(3);
  });

  it('refuses a second request handler, or both kinds, on one stream and group when they are added', () => {
    const { handlers } = registry();
    handlers.add('payments.charge', handler(), false, {});
    expect(() => handlers.add('payments.charge', handler(), false, {})).toThrow(
      new InvalidOptionsError(
        'Two @MessagePattern handlers read stream "payments.charge" in group "nest": a request must have one answer. ' +
          'Give one of them another group or pattern.',
      ),
    );
    expect(() => handlers.add('payments.charge', handler(), true, {})).toThrow(
      /^Stream "payments.charge" has both @EventPattern and @MessagePattern handlers in group "nest"/,
    );
    handlers.add('payments.charge', handler(), true, { group: 'audit' });
    expect(handlers.registrations().map(({ group, kind }) => [group, kind])).toEqual([
      ['nest', 'message'],
      ['audit', 'event'],
    ]);
  });

  it("reports the first refused handler's options when read, naming its stream (listen() fails with it)", () => {
    const { handlers } = registry();
    handlers.add('orders', handler(), true, {});
    expect(() => handlers.add('refunds', handler(), true, { concurrency: 0 } as StreamHandlerOptions)).not.toThrow();
    handlers.add('returns', handler(), true, { ackMode: 'later' } as unknown as StreamHandlerOptions);
    expect(() => handlers.registrations()).toThrow(InvalidOptionsError);
    expect(() => handlers.subscriptions()).toThrow(
      'Option "concurrency" must be a positive integer for stream "app:refunds", got 0.',
    );
    expect(handlers.find('refunds', {})).toBeUndefined();
  });

  it("on a cluster, refuses a dead-letter stream in another slot than a partition, naming that partition's stream", () => {
    const { handlers } = registry(true);
    // In the logical stream's slot, so only the partitions' own slots refuse it.
    handlers.add('orders', handler(), true, { partitions: 2, deadLetterStream: '{app:orders}:parked' });
    expect(() => handlers.registrations()).toThrow(
      /^Dead-letter stream "\{app:orders\}:parked" hashes to another cluster slot than stream "app:orders:\{app:orders:0\}"/,
    );
  });
});
