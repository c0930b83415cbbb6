import { InvalidOptionsError } from '../errors/invalid-options.error.js';
import { resolveHandlerOptions, resolveServerOptions } from './resolve-options.js';

describe('option resolution', () => {
  it('applies defaults once and lets handler extras override them', () => {
    const server = resolveServerOptions({ consumer: 'pod-1', concurrency: 2 });
    const handler = resolveHandlerOptions(server, { group: 'billing', concurrency: 100 }, 'orders');
    expect(handler).toEqual({
      group: 'billing',
      concurrency: 100,
      prefetchCount: 100,
      startId: '0',
      ackMode: 'auto',
      maxDeliveries: 5,
      minIdleTimeMs: 30_000,
      deadLetterStream: 'orders:dlq',
      maxHandlerMs: 300_000,
      orderingKey: undefined,
      autoReadAhead: true,
    });
  });

  it('reads ahead 64 entries by default, still one handler at a time; concurrency above that raises it', () => {
    const server = resolveServerOptions({ consumer: 'pod-1' });
    expect(resolveHandlerOptions(server, {}, 'orders')).toMatchObject({ concurrency: 1, prefetchCount: 64 });
    expect(resolveHandlerOptions(server, { concurrency: 200 }, 'orders').prefetchCount).toBe(200);
    // No read-ahead when asked: prefetchCount 1 with concurrency 1.
    expect(resolveHandlerOptions(server, { prefetchCount: 1 }, 'orders').prefetchCount).toBe(1);
    expect(resolveHandlerOptions(resolveServerOptions({ consumer: 'pod-1', prefetchCount: 8 }), {}, 'orders').prefetchCount).toBe(
      8,
    );
  });

  it('sizes the read-ahead by the handler pace only where no prefetchCount was given, and never for batch handlers', () => {
    const server = resolveServerOptions({ consumer: 'pod-1' });
    expect(resolveHandlerOptions(server, {}, 'orders').autoReadAhead).toBe(true);
    expect(resolveHandlerOptions(server, { prefetchCount: 64 }, 'orders')).not.toHaveProperty('autoReadAhead');
    const serverWide = resolveServerOptions({ consumer: 'pod-1', prefetchCount: 64 });
    expect(resolveHandlerOptions(serverWide, {}, 'orders')).not.toHaveProperty('autoReadAhead');
    expect(resolveHandlerOptions(server, { batch: { maxSize: 100 } }, 'orders')).not.toHaveProperty('autoReadAhead');
  });

  it('runs handlers direct by default, and takes directHandlers: false to turn that off', () => {
    expect(resolveServerOptions({ consumer: 'pod-1' }).directHandlers).toBe(true);
    expect(resolveServerOptions({ consumer: 'pod-1', directHandlers: false }).directHandlers).toBe(false);
  });

  it.each([
    [{ blockMs: 0 }, 'Option "blockMs" must be a positive integer, got 0.'],
    [{ reclaimIntervalMs: -1 }, 'Option "reclaimIntervalMs" must be a positive integer (or 0 to turn it off), got -1.'],
    [{ consumer: '' }, 'Option "consumer" must be a non-empty string, got "".'],
    [{ ackMode: 'later' as never }, 'Option "ackMode" must be "auto" or "manual", got "later".'],
    [{ directHandlers: 'no' as never }, 'Option "directHandlers" must be true or false, got "no".'],
    [{ directHandlers: 0 as never }, 'Option "directHandlers" must be true or false, got 0.'],
    [{ claimReads: 'false' as never }, 'Option "claimReads" must be true or false, got "false".'],
    [{ checkEveryAck: 1 as never }, 'Option "checkEveryAck" must be true or false, got 1.'],
    [{ leaseRenewal: null as never }, 'Option "leaseRenewal" must be true or false, got null.'],
    [{ startId: 'latest' }, 'Option "startId" must be "0", "$" or a stream id like "1700000000000-0", got "latest".'],
  ])('rejects %j naming the option and the value', (options, message) => {
    expect(() => resolveServerOptions(options)).toThrow(InvalidOptionsError);
    expect(() => resolveServerOptions(options)).toThrow(message);
  });

  it('names the stream when a handler option is wrong', () => {
    const server = resolveServerOptions({ consumer: 'pod-1' });
    expect(() => resolveHandlerOptions(server, { maxDeliveries: 1.5 }, 'orders')).toThrow(
      'Option "maxDeliveries" must be a positive integer for stream "orders", got 1.5.',
    );
  });

  it('adds exclusive ownership only when asked for, with its lease', () => {
    const server = resolveServerOptions({ consumer: 'pod-1' });
    expect(resolveHandlerOptions(server, {}, 'orders').exclusive).toBeUndefined();
    expect(resolveHandlerOptions(server, { ownership: 'shared' }, 'orders')).not.toHaveProperty('exclusive');
    expect(resolveHandlerOptions(server, { ownership: 'exclusive' }, 'orders').exclusive).toEqual({ leaseMs: 10_000 });
    expect(resolveHandlerOptions(server, { ownership: 'exclusive', ownershipLeaseMs: 900 }, 'orders').exclusive).toEqual({
      leaseMs: 900,
    });
  });

  it('rejects a wrong ownership or a lease too short to renew, naming the stream', () => {
    const server = resolveServerOptions({ consumer: 'pod-1' });
    expect(() => resolveHandlerOptions(server, { ownership: 'single' as never }, 'orders')).toThrow(
      'Option "ownership" must be "shared" or "exclusive" for stream "orders", got "single".',
    );
    expect(() => resolveHandlerOptions(server, { ownership: 'exclusive', ownershipLeaseMs: 100 }, 'orders')).toThrow(
      'Option "ownershipLeaseMs" must be an integer of at least 300 for stream "orders", got 100.',
    );
  });
});
