import type { StreamHandlerOptions } from '../interfaces/stream-handler-options.interface.js';
import { resolveHandlerOptions, resolveServerOptions } from './resolve-options.js';
import { batchOptionsOf } from '../consumer/index.js';

const server = resolveServerOptions({ consumer: 'pod-1' });
const resolve = (extras: StreamHandlerOptions) => resolveHandlerOptions(server, extras, 'orders');

describe('batch handler options', () => {
  it('defaults maxWaitMs to 0 and reads the running batches plus the next one ahead', () => {
    const options = resolve({ batch: { maxSize: 500 } });
    expect(batchOptionsOf(options)).toEqual({ maxSize: 500, maxWaitMs: 0 });
    expect(options.prefetchCount).toBe(1000);
    expect(resolve({ concurrency: 2, batch: { maxSize: 100, maxWaitMs: 20 } }).prefetchCount).toBe(300);
    expect(batchOptionsOf(resolve({}))).toBeUndefined();
  });

  it("keeps a handler's own prefetchCount that holds a full batch, and refuses one that cannot", () => {
    expect(resolve({ prefetchCount: 600, batch: { maxSize: 500 } }).prefetchCount).toBe(600);
    expect(() => resolve({ prefetchCount: 100, batch: { maxSize: 500 } })).toThrow(
      'Option "prefetchCount" (100) is smaller than "batch.maxSize" (500) for stream "orders": a batch could never fill. Raise prefetchCount to at least 500',
    );
  });

  it.each([
    [{ maxSize: 0 }, 'Option "batch.maxSize" must be a positive integer for stream "orders", got 0.'],
    [{ maxSize: 2.5 }, 'Option "batch.maxSize" must be a positive integer for stream "orders", got 2.5.'],
    [{ maxSize: 10, maxWaitMs: -1 }, 'Option "batch.maxWaitMs" must be an integer ≥ 0 for stream "orders", got -1.'],
    [500, 'Option "batch" must be an object like { maxSize: 500, maxWaitMs: 20 } for stream "orders", got 500.'],
  ])('refuses batch %j with a message naming the value', (batch, message) => {
    expect(() => resolve({ batch } as StreamHandlerOptions)).toThrow(message);
  });

  it('refuses what a batch cannot be combined with, saying what to do instead', () => {
    expect(() => resolve({ ackMode: 'manual', batch: { maxSize: 5 } })).toThrow(/batch\.fail\(index, error\).*Remove ackMode/);
    expect(() => resolve({ orderingKey: 'customerId', batch: { maxSize: 5 } })).toThrow(/Remove orderingKey/);
    expect(() => resolveServerOptions({ batch: { maxSize: 5 } })).toThrow(/per-handler option/);
  });
});
