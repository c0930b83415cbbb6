import { skipBeforeRunning } from './request-guard.js';

describe('request guard', () => {
  const at = { stream: 's', group: 'payments', kind: 'message' as const, replyStreamPrefix: 'nrs:replies:', clock: () => 10_000 };

  it('lets through what this group may run', () => {
    expect(skipBeforeRunning('1-0', { foreign: true }, at)).toBeNull();
    expect(
      skipBeforeRunning('1-0', { foreign: false, targetGroup: 'payments', replyTo: 'nrs:replies:h:u', deadline: 10_000 }, at),
    ).toBeNull();
    // An event handler writes no reply, so its reply_to is nobody's business.
    expect(skipBeforeRunning('1-0', { foreign: false, replyTo: 'victim' }, { ...at, kind: 'event' })).toBeNull();
  });

  it('skips re-drives of other groups, foreign reply streams and expired requests, in that order', () => {
    expect(skipBeforeRunning('1-0', { foreign: true, targetGroup: 'shipping', replyTo: 'victim', deadline: 1 }, at)?.reason).toBe(
      'other-group',
    );
    expect(skipBeforeRunning('1-0', { foreign: false, replyTo: 'victim', deadline: 1 }, at)?.reason).toBe('reply-to-refused');
    const late = skipBeforeRunning('1-0', { foreign: false, replyTo: 'nrs:replies:h:u', deadline: 9_000 }, at);
    expect(late).toMatchObject({ reason: 'request-expired' });
    expect(late?.detail).toContain('1000 ms after its deadline');
  });
});
