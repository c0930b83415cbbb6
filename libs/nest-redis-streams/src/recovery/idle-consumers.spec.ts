import type { Logger } from '@nestjs/common';
import type { ScriptedRedis } from '../redis/scripts.js';
import { removeIdleConsumers } from './idle-consumers.js';

// Which consumers the clean-up picks, against a fake of XINFO CONSUMERS and of the script that
// deletes a consumer only if it still holds nothing (tested against Redis in test/).

class FakeRedis implements Pick<ScriptedRedis, 'nrsDeleteConsumerIfIdle'> {
  /** XINFO CONSUMERS rows, as Redis sends them: flat name/value pairs. */
  consumers: unknown[][] = [];
  /** Consumers that took an entry between XINFO and the delete: the script refuses them (0). */
  readonly busyMeanwhile = new Set<string>();
  readonly deleted: string[] = [];
  failWith: Error | null = null;

  /** ioredis overloads XINFO; the clean-up reads CONSUMERS only. */
  async xinfo(...args: string[]): Promise<unknown[][]> {
    expect(args).toEqual(['CONSUMERS', 'orders', 'billing']);
    if (this.failWith) throw this.failWith;
    return this.consumers;
  }

  async nrsDeleteConsumerIfIdle(
    ...[stream, beats, group, name]: Parameters<ScriptedRedis['nrsDeleteConsumerIfIdle']>
  ): Promise<number> {
    expect([stream, beats, group]).toEqual(['orders', '{orders}:nrs-beats:billing', 'billing']);
    if (this.busyMeanwhile.has(name)) return 0;
    this.deleted.push(name);
    return 1;
  }
}

const consumer = (name: string, pending: number, idle: number) => [
  'name',
  name,
  'pending',
  pending,
  'idle',
  idle,
  'inactive',
  idle,
];

function setup() {
  const redis = new FakeRedis();
  const logs: Array<[level: 'log' | 'warn', message: string]> = [];
  const logger: Pick<Logger, 'log' | 'warn'> = {
    log: (message: string) => void logs.push(['log', message]),
    warn: (message: string) => void logs.push(['warn', message]),
  };
  const remove = () =>
    removeIdleConsumers(redis as unknown as ScriptedRedis, 'orders', 'billing', 60_000, logger as Logger, 'me');
  return { redis, logs, remove };
}

describe('removeIdleConsumers', () => {
  it('deletes consumers idle at least idleMs that hold nothing, never itself nor one with pending entries', async () => {
    const { redis, logs, remove } = setup();
    redis.consumers = [
      consumer('me', 0, 600_000),
      consumer('gone', 0, 60_000),
      consumer('holding', 3, 600_000),
      consumer('recent', 0, 59_999),
      consumer('old', 0, 900_000),
    ];
    await expect(remove()).resolves.toEqual(['gone', 'old']);
    expect(redis.deleted).toEqual(['gone', 'old']);
    expect(logs).toEqual([['log', 'Removed idle consumers without pending entries from "orders" group "billing": gone, old.']]);
  });

  it('leaves out a consumer the script refused (it took an entry meanwhile), and logs nothing when none was deleted', async () => {
    const { redis, logs, remove } = setup();
    redis.consumers = [consumer('gone', 0, 600_000)];
    redis.busyMeanwhile.add('gone');
    await expect(remove()).resolves.toEqual([]);
    expect(logs).toEqual([]);
  });

  it('never throws: a failure is a warning and nothing is reported removed', async () => {
    const { redis, logs, remove } = setup();
    redis.failWith = new Error('NOGROUP No such key');
    await expect(remove()).resolves.toEqual([]);
    expect(logs).toEqual([['warn', 'Idle-consumer cleanup of "orders" group "billing" failed: NOGROUP No such key']]);
  });
});
