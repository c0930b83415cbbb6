import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { REDIS_STREAMS_CLIENT, type RedisStreamsClient, RedisStreamsMetrics, RedisStreamsServer } from 'nest-redis-streams';
import { attachOutboxMetrics } from 'nest-redis-streams/database';
import { AppModule } from './app.module.js';
import { openDemoDatabase } from './database/demo-database.js';
import { DemoOutboxRelay } from './database/demo-outbox-relay.js';

/** Shutdown budget of the transport; Kubernetes' terminationGracePeriodSeconds must exceed it. */
const SHUTDOWN_TIMEOUT_MS = 10_000;

async function bootstrap(): Promise<void> {
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const server = new RedisStreamsServer({
    connection: redisUrl,
    consumer: process.env.CONSUMER_NAME, // the pod name in Kubernetes; the host name by default
    shutdownTimeoutMs: SHUTDOWN_TIMEOUT_MS,
    reclaimIntervalMs: 1_000,
    retryBackoffMs: 200,
  });
  // Embedded PGlite unless DATABASE_URL names a PostgreSQL.
  const database = await openDemoDatabase();
  const app = await NestFactory.create(AppModule.register(server, redisUrl, database));
  app.enableShutdownHooks();
  // Hybrid app: HTTP and the Redis Streams transport in one process.
  app.connectMicroservice({ strategy: server });
  // Every metric source, so that no dashboard panel is empty: the server (consumers), the client
  // (XADD latency, retention) and the outbox relay (backlog, age, parked, relay lag).
  new RedisStreamsMetrics()
    .attach(server, { sampleIntervalMs: 2_000 })
    .attachClient(app.get<RedisStreamsClient>(REDIS_STREAMS_CLIENT));
  attachOutboxMetrics(app.get(DemoOutboxRelay));
  await app.startAllMicroservices();
  const port = Number(process.env.PORT ?? 3000);
  await app.listen(port, process.env.HOST ?? '127.0.0.1');
  new Logger('OrdersDemo').log(`Listening on http://127.0.0.1:${port} (Redis ${redisUrl}, ${database.description}).`);
  new Logger('OrdersDemo').log(`Streams console: http://127.0.0.1:${port}/streams-console`);
}

bootstrap().catch((err) => {
  new Logger('OrdersDemo').error(`Could not start: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
