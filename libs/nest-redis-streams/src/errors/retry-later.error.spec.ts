import { RetryLater, retryLaterDue } from './retry-later.error.js';

describe('retryLaterDue', () => {
  it("takes a delay in ms as what is left of it, for Redis' clock to count from", () => {
    const thrown = new RetryLater(10_000);
    expect(retryLaterDue(thrown, thrown.retryAt, thrown.retryAt - 7_000)).toEqual({ inMs: 7_000 });
    expect(retryLaterDue(thrown, thrown.retryAt, thrown.retryAt + 1)).toEqual({ inMs: 0 });
  });

  it('takes a Date as the absolute time it names', () => {
    const at = new Date(Date.now() + 60_000);
    expect(retryLaterDue(new RetryLater(at), at.getTime())).toBe(at.getTime());
  });

  it("reads the same from what Nest's RPC filters hand over (the error's plain payload)", () => {
    const relative = new RetryLater(5_000).getError() as { retryAt: number };
    const absolute = new RetryLater(new Date(Date.now() + 5_000)).getError() as { retryAt: number };
    expect(retryLaterDue(relative, relative.retryAt, relative.retryAt - 5_000)).toEqual({ inMs: 5_000 });
    expect(retryLaterDue(absolute, absolute.retryAt)).toBe(absolute.retryAt);
  });
});
