import { Inject, Injectable } from '@nestjs/common';
import { InjectRedisStreamsClient, RedisStreamsClient } from 'nest-redis-streams';
import { OutboxRelay, type SqlDatabase } from 'nest-redis-streams/database';
import { DATABASE } from './demo-database.js';

/**
 * Publishes the outbox's orders to the `orders` stream (with the order's event id), then marks
 * them sent; starts with the app and stops before it shuts down.
 */
@Injectable()
export class DemoOutboxRelay extends OutboxRelay {
  constructor(@Inject(DATABASE) db: SqlDatabase, @InjectRedisStreamsClient() client: RedisStreamsClient) {
    super(db, client, { pollIntervalMs: 500 });
  }
}
