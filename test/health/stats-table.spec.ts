import { type StreamStats, collectStreamStats, formatStatsTable } from 'nest-redis-streams';
import { formatDuration } from '../../libs/nest-redis-streams/src/health/stats-table.js';
import { redisClient, unique } from '../support/helpers.js';

describe('formatStatsTable', () => {
  const row = (over: Partial<StreamStats>): StreamStats => ({
    stream: 'orders',
    group: 'billing',
    deadLetterStream: 'orders:dlq',
    pending: 0,
    oldestIdleMs: 0,
    lag: 0,
    deadLetters: 0,
    groupDeadLetters: 0,
    consumers: 1,
    ...over,
  });

  it('renders one aligned line per stream/group with every figure', () => {
    const table = formatStatsTable([
      row({ pending: 12, oldestIdleMs: 1_250, lag: 340, deadLetters: 5, groupDeadLetters: 2, consumers: 3 }),
      row({
        stream: 'payments-eu',
        group: 'ledger',
        lag: null,
        oldestIdleMs: 125_000,
        deadLetters: 2_000,
        groupDeadLetters: null,
      }),
    ]);
    expect(table.split('\n')).toEqual([
      'stream       group    pending  oldest idle      lag       dead letters  consumers',
      '-----------  -------  -------  -----------  -------  -----------------  ---------',
      'orders       billing       12        1.3 s      340                  2          3',
      'payments-eu  ledger         0    2 min 5 s  unknown  2000 (all groups)          1',
    ]);
  });

  it('says so when there is nothing to show', () => {
    expect(formatStatsTable([]).split('\n').at(-1)).toBe('(no streams)');
  });

  it('formats durations from milliseconds to hours', () => {
    expect([0, 850, 12_340, 245_000, 7_800_000].map(formatDuration)).toEqual([
      '0 ms',
      '850 ms',
      '12.3 s',
      '4 min 5 s',
      '2 h 10 min',
    ]);
  });

  it('shows the figures collectStreamStats read from Redis', async () => {
    const redis = redisClient();
    try {
      const stream = unique('table');
      await redis.xgroup('CREATE', stream, 'reports', '0', 'MKSTREAM');
      for (let i = 0; i < 7; i++) await redis.xadd(stream, '*', 'n', String(i));
      await redis.xreadgroup('GROUP', 'reports', 'worker-1', 'COUNT', 3, 'STREAMS', stream, '>');
      await redis.xadd(`${stream}:dlq`, '*', 'dlq:reason', 'undecodable');
      const stats = await collectStreamStats(redis, stream, 'reports', `${stream}:dlq`);
      const [, , line] = formatStatsTable([stats]).split('\n');
      expect(line.split(/\s{2,}/)).toEqual([stream, 'reports', '3', formatDuration(stats.oldestIdleMs), '4', '1', '1']);
    } finally {
      await redis.quit();
    }
  });
});
