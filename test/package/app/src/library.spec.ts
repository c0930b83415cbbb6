// Runs under the fixture's own Jest setup (ts-jest for the Nest 11 CommonJS app).
import { DLQ_FIELDS, RedisStreamsContext, RedisStreamsServer, streamPattern } from 'nest-redis-streams';
import { CONTENT_SECURITY_POLICY, RedisStreamsConsoleModule } from 'nest-redis-streams/console';
import { Inbox, Outbox, reconcile } from 'nest-redis-streams/database';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { checkMigrations } from './migrations.check.js';

describe('nest-redis-streams in this app', () => {
  it('loads with its options checked and its public names in place', () => {
    const server = new RedisStreamsServer({ connection: 'redis://127.0.0.1:1', concurrency: 4 });
    expect(server.options.concurrency).toBe(4);
    expect(typeof RedisStreamsContext).toBe('function');
    expect(streamPattern('orders')).toEqual({ stream: 'orders' });
    expect(DLQ_FIELDS.reason).toBe('dlq:reason');
  });

  it('loads the console and the database entry points', () => {
    expect(RedisStreamsConsoleModule.forRoot({ readOnly: true }).module).toBe(RedisStreamsConsoleModule);
    expect(CONTENT_SECURITY_POLICY).toContain("default-src 'none'");
    expect([Inbox, Outbox, reconcile].map((value) => typeof value)).toEqual(['function', 'function', 'function']);
  });

  it('finds and applies the migrations shipped in the package', async () => {
    // Every .sql file the installed package ships, in order, whichever build the app loads.
    const shipped = readdirSync(join(dirname(require.resolve('nest-redis-streams/package.json')), 'migrations'))
      .filter((name) => name.endsWith('.sql'))
      .sort();
    expect(shipped.slice(0, 2)).toEqual(['001_inbox.sql', '002_outbox.sql']);
    expect(await checkMigrations()).toBe(shipped.join(','));
  });
});
