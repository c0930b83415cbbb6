import { partitionOf, partitionStream } from '../keys/index.js';
import { resolveClientOptions } from './resolve-client-options.js';
import { StreamRecord } from './stream-record.js';
import { StreamRoutes } from './stream-routes.js';

const routesWith = (options: Parameters<typeof resolveClientOptions>[0]) => {
  const normalize = jest.fn((pattern: unknown) => (typeof pattern === 'string' ? pattern : JSON.stringify(pattern)));
  return { routes: new StreamRoutes(resolveClientOptions(options), normalize), normalize };
};

describe('StreamRoutes', () => {
  it('works a string pattern out once: key prefix, retention by pattern, a fixed MAXLEN head', () => {
    const { routes, normalize } = routesWith({
      keyPrefix: 'app:',
      retention: { maxLen: 5 },
      retentionByPattern: { audit: { safe: true, maxLen: 9 } },
    });
    const orders = routes.of('orders');
    expect(routes.of('orders')).toBe(orders);
    expect(normalize).toHaveBeenCalledTimes(1);
    expect(orders).toEqual({
      stream: 'app:orders',
      partitions: ['app:orders'],
      retention: { maxLen: 5 },
      head: ['MAXLEN', '~', 5, '*'],
    });
    // A safe retention is trimmed periodically, not on XADD.
    expect(routes.headOf(routes.of('audit'))).toEqual(['*']);
  });

  it('builds a MINID head per write (the lowest id moves with the clock) and ignores inherited option keys', () => {
    const { routes } = routesWith({ retention: { minIdAgeMs: 60_000 } });
    const route = routes.of('constructor');
    expect(route.head).toBeNull();
    expect(route.partitions).toEqual(['constructor']);
    const [minId, approx, id, star] = routes.headOf(route);
    expect([minId, approx, star]).toEqual(['MINID', '~', '*']);
    expect(Number(String(id).split('-')[0])).toBeGreaterThan(Date.now() - 61_000);
  });

  it('routes keyed records to their key partition and round-robins the rest', () => {
    const { routes } = routesWith({ partitions: { orders: 3 } });
    const route = routes.of('orders');
    expect(routes.streamFor(route, new StreamRecord({}, { partitionKey: 'c-7' }))).toBe(
      partitionStream('orders', partitionOf('c-7', 3)),
    );
    expect([1, 2, 3, 4].map((n) => routes.streamFor(route, { n }))).toEqual(
      [0, 1, 2, 0].map((p) => partitionStream('orders', p)),
    );
  });

  it('routes an unkeyed record by its event id, so every copy of one event lands in one partition', () => {
    const { routes } = routesWith({ partitions: { orders: 4 } });
    const route = routes.of('orders');
    const ids = Array.from({ length: 40 }, (_, i) => `order-${i}-placed`);
    const first = ids.map((eventId) => routes.streamFor(route, new StreamRecord({}, { eventId })));
    const again = ids.map((eventId) => routes.streamFor(route, new StreamRecord({ retry: true }, { eventId })));
    expect(again).toEqual(first);
    expect(first).toEqual(ids.map((id) => partitionStream('orders', partitionOf(id, 4))));
    // Still spread over the partitions; a partition key wins over the event id.
    expect(new Set(first).size).toBe(4);
    expect(routes.streamFor(route, new StreamRecord({}, { eventId: ids[0], partitionKey: 'c-7' }))).toBe(
      partitionStream('orders', partitionOf('c-7', 4)),
    );
  });
});
