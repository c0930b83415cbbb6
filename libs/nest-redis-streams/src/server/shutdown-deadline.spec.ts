import { settleWithin } from './shutdown-deadline.js';

describe('settleWithin', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('returns true once a graceful shutdown settled in time, without giving up', async () => {
    const giveUp = jest.fn();
    await expect(settleWithin(Promise.resolve(), 1_000, 5_000, giveUp)).resolves.toBe(true);
    expect(giveUp).not.toHaveBeenCalled();
  });

  it('rejects like a graceful shutdown that failed in time', async () => {
    const giveUp = jest.fn();
    await expect(settleWithin(Promise.reject(new Error('quit refused')), 1_000, 5_000, giveUp)).rejects.toThrow('quit refused');
    expect(giveUp).not.toHaveBeenCalled();
  });

  it('gives up past the limit, then waits the grace period for the shutdown before returning false', async () => {
    let finish!: () => void;
    const graceful = new Promise<void>((resolve) => (finish = resolve));
    const giveUp = jest.fn(() => finish());
    const result = settleWithin(graceful, 1_000, 5_000, giveUp);
    await jest.advanceTimersByTimeAsync(999);
    expect(giveUp).not.toHaveBeenCalled();
    await jest.advanceTimersByTimeAsync(1);
    expect(giveUp).toHaveBeenCalledTimes(1);
    // Dropping the connections failed what waited on Redis: the shutdown ends within the grace period.
    await expect(result).resolves.toBe(false);
  });

  it('returns false after the grace period when the shutdown never ends', async () => {
    const result = settleWithin(new Promise<void>(() => undefined), 1_000, 5_000, () => undefined);
    let settled = false;
    void result.then(() => (settled = true));
    await jest.advanceTimersByTimeAsync(5_999);
    expect(settled).toBe(false);
    await jest.advanceTimersByTimeAsync(1);
    await expect(result).resolves.toBe(false);
  });
});
