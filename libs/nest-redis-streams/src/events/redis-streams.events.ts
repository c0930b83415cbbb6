/** Connection status reported through `server.status` and `client.status`. */
export enum RedisStreamsStatus {
  CONNECTED = 'connected',
  DISCONNECTED = 'disconnected',
  RECONNECTING = 'reconnecting',
}

/** Events forwarded by `on()` from the underlying ioredis connections. */
export type RedisStreamsEvents = {
  error: (err: Error) => void;
  connect: () => void;
  ready: () => void;
  reconnecting: (delayMs: number) => void;
  end: () => void;
};
