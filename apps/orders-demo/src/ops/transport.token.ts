/** Injection token of the app's RedisStreamsServer (the transport strategy instance). */
export const TRANSPORT = Symbol('orders-demo:transport');
