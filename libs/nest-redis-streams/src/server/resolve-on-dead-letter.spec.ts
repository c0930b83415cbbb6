import { resolveHandlerOptions, resolveServerOptions } from './resolve-options.js';

describe("option onDeadLetter: 'block-key'", () => {
  const server = resolveServerOptions({ consumer: 'pod-1' });

  it('is left out by default and with continue, and kept with an orderingKey', () => {
    expect(resolveHandlerOptions(server, { orderingKey: 'k' }, 'orders')).not.toHaveProperty('onDeadLetter');
    expect(resolveHandlerOptions(server, { orderingKey: 'k', onDeadLetter: 'continue' }, 'orders')).not.toHaveProperty(
      'onDeadLetter',
    );
    expect(resolveHandlerOptions(server, { orderingKey: 'k', onDeadLetter: 'block-key' }, 'orders').onDeadLetter).toBe(
      'block-key',
    );
  });

  it('comes from the server-wide default, checked per handler', () => {
    const blocking = resolveServerOptions({ consumer: 'pod-1', onDeadLetter: 'block-key' });
    expect(resolveHandlerOptions(blocking, { orderingKey: 'k' }, 'orders').onDeadLetter).toBe('block-key');
    expect(resolveHandlerOptions(blocking, { onDeadLetter: 'continue' }, 'audit')).not.toHaveProperty('onDeadLetter');
    expect(() => resolveHandlerOptions(blocking, {}, 'audit')).toThrow(/for stream "audit" needs an orderingKey/);
  });

  it.each([
    [{ onDeadLetter: 'block' }, 'Option "onDeadLetter" must be "continue" or "block-key" for stream "orders", got "block".'],
    [{ onDeadLetter: 'block-key' }, "Give this handler an orderingKey, or onDeadLetter: 'continue'"],
    [{ onDeadLetter: 'block-key', orderingKey: 'k', ackMode: 'manual' }, "Use ackMode: 'auto' on this handler."],
    [{ onDeadLetter: 'block-key', batch: { maxSize: 5 } }, 'batch handlers cannot have either'],
  ])('refuses %j', (extras, message) => {
    expect(() => resolveHandlerOptions(server, extras as never, 'orders')).toThrow(message);
  });
});
