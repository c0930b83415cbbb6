import type { WritePacket } from '@nestjs/microservices';
import { PendingRequests } from './pending-requests.js';

describe('PendingRequests', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  const make = () => new PendingRequests(1_000, (stream) => new Error(`timeout on ${stream}`));

  it('routes replies by correlation id and forgets a request on its last reply', () => {
    const requests = make();
    const a: WritePacket[] = [];
    const b: WritePacket[] = [];
    requests.add('a', 's', (p) => a.push(p));
    requests.add('b', 's', (p) => b.push(p));
    expect(requests.deliver('b', { response: 1 })).toBe(true);
    expect(requests.deliver('a', { response: 2, isDisposed: true })).toBe(true);
    expect(a).toEqual([{ response: 2, isDisposed: true }]);
    expect(b).toEqual([{ response: 1 }]);
    expect(requests.size).toBe(1);
    expect(requests.deliver('a', { response: 3 })).toBe(false);
  });

  it('times requests out, removing them', () => {
    const requests = make();
    const got: WritePacket[] = [];
    requests.add('a', 'orders', (p) => got.push(p));
    jest.advanceTimersByTime(1_000);
    expect(requests.size).toBe(0);
    expect((got[0].err as Error).message).toBe('timeout on orders');
  });

  it('ends a request on an error reply, even a falsy one', () => {
    const requests = make();
    const got: WritePacket[] = [];
    requests.add('a', 's', (p) => got.push(p));
    requests.deliver('a', { err: '' });
    expect(requests.size).toBe(0);
    expect(got[0].err).toBeInstanceOf(Error);
  });

  it('fails all on close and clears their timers', () => {
    const requests = make();
    const got: WritePacket[] = [];
    for (const id of ['a', 'b', 'c']) requests.add(id, `s-${id}`, (p) => got.push(p));
    requests.failAll((stream) => `closed ${stream}`);
    expect(requests.size).toBe(0);
    expect(got.map((p) => p.err)).toEqual(['closed s-a', 'closed s-b', 'closed s-c']);
    expect(jest.getTimerCount()).toBe(0);
  });
});
