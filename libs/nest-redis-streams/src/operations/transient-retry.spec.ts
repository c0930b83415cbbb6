import { RedisKeptRefusingError, isTransientRedisError, retryTransient } from './transient-retry.js';

const live = { status: 'ready' as const };
const closed = { status: 'end' as const };

describe('isTransientRedisError', () => {
  it.each([
    "OOM command not allowed when used memory > 'maxmemory'.",
    'LOADING Redis is loading the dataset in memory',
    'BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.',
    "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
    'TRYAGAIN Multiple keys request during rehashing of slot',
    'CLUSTERDOWN The cluster is down',
    "READONLY You can't write against a read only replica.",
    'Connection is closed.',
    'connect ECONNREFUSED 127.0.0.1:6379',
    'Reached the max retries per request limit (which is 20). Refer to "maxRetriesPerRequest" option for details.',
  ])('waits out %s', (message) => {
    expect(isTransientRedisError(new Error(message), live)).toBe(true);
  });

  it.each([
    'BUSYGROUP Consumer Group name already exists',
    'WRONGTYPE Operation against a key holding the wrong kind of value',
    "NOPERM User ops has no permissions to run the 'xadd' command",
    'ERR Error running script',
  ])('does not wait out %s', (message) => {
    expect(isTransientRedisError(new Error(message), live)).toBe(false);
  });

  it('does not wait for a client closed for good', () => {
    expect(isTransientRedisError(new Error('Connection is closed.'), closed)).toBe(false);
    expect(isTransientRedisError(new Error('OOM command not allowed'), closed)).toBe(true);
  });
});

describe('retryTransient', () => {
  const policy = { forMs: 1_000, firstDelayMs: 1, maxDelayMs: 4 };

  it('runs a step again while Redis refuses it, then answers its result', async () => {
    let calls = 0;
    const step = async () => {
      calls += 1;
      if (calls < 4) throw new Error('OOM command not allowed');
      return 'ok';
    };
    await expect(retryTransient(live, policy, step)).resolves.toBe('ok');
    expect(calls).toBe(4);
  });

  it('throws any other error at once', async () => {
    let calls = 0;
    const step = async () => {
      calls += 1;
      throw new Error('WRONGTYPE Operation against a key holding the wrong kind of value');
    };
    await expect(retryTransient(live, policy, step)).rejects.toThrow(/^WRONGTYPE/);
    expect(calls).toBe(1);
  });

  it('gives up past its window, saying for how long and the last refusal', async () => {
    const step = async () => {
      throw new Error('LOADING Redis is loading the dataset in memory');
    };
    const err = await retryTransient(live, { ...policy, forMs: 20 }, step).catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(RedisKeptRefusingError);
    expect(err.message).toMatch(/^Redis refused it for \d+ s, the last time with: LOADING Redis is loading/);
    expect((err.cause as Error).message).toMatch(/^LOADING/);
  });
});
