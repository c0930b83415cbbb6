import { PartitionFence } from './partition-fence.js';

describe('PartitionFence', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  const fence = () => new PartitionFence('{orders:0}:nrs-owner:billing', 'c1#start');

  it('holds nothing until a generation is granted', () => {
    const f = fence();
    expect(f.generation).toBeNull();
    expect(f.held).toBe(false);
    expect([f.ownerKey, f.member]).toEqual(['{orders:0}:nrs-owner:billing', 'c1#start']);
  });

  it('is held for leaseMs from when the granting request was sent, not from when the grant arrived', () => {
    const f = fence();
    const sentAt = performance.now();
    jest.advanceTimersByTime(200); // the request's round trip
    f.grant('3', sentAt, 1_000);
    expect(f.generation).toBe('3');
    jest.advanceTimersByTime(799);
    expect(f.held).toBe(true);
    jest.advanceTimersByTime(1);
    expect(f.held).toBe(false);
    // The generation stays: a late renewal under it may still succeed.
    expect(f.generation).toBe('3');
  });

  it('is not held at all when the grant arrives after its lease ended', () => {
    const f = fence();
    const sentAt = performance.now();
    jest.advanceTimersByTime(1_500);
    f.grant('3', sentAt, 1_000);
    expect(f.held).toBe(false);
  });

  it('extends the lease on a renewal under the same generation, and takes a new generation on a new grant', () => {
    const f = fence();
    f.grant('3', performance.now(), 1_000);
    jest.advanceTimersByTime(900);
    f.grant('3', performance.now(), 1_000);
    jest.advanceTimersByTime(900);
    expect(f.held).toBe(true);
    f.grant('4', performance.now(), 1_000);
    expect(f.generation).toBe('4');
  });

  it('revoke() drops the generation and the lease at once', () => {
    const f = fence();
    f.grant('3', performance.now(), 1_000);
    f.revoke();
    expect(f.generation).toBeNull();
    expect(f.held).toBe(false);
  });

  it('calls its listener on every grant and renewal (the paused read loop wakes), and only the latest listener', () => {
    const f = fence();
    const calls: string[] = [];
    f.grant('1', performance.now(), 1_000); // no listener yet: nothing to call
    f.onGranted(() => calls.push('first'));
    f.onGranted(() => calls.push(`second ${f.generation}`));
    f.grant('2', performance.now(), 1_000);
    f.grant('2', performance.now(), 1_000);
    f.revoke();
    expect(calls).toEqual(['second 2', 'second 2']);
  });
});
