import { eventMember, partitionStream, retryMember, scheduleKeysOf, slotOf } from './index.js';

describe('scheduleKeysOf', () => {
  it.each(['orders', 'app:orders', partitionStream('orders', 3), 'weird{name', 'tagged:{t}:x'])(
    "keeps %s in its stream's slot",
    (stream) => {
      const { due, entries } = scheduleKeysOf(stream);
      expect(slotOf(due)).toBe(slotOf(stream));
      expect(slotOf(entries)).toBe(slotOf(stream));
      expect(due).not.toBe(entries);
    },
  );

  it('names the keys after the stream', () => {
    expect(scheduleKeysOf('orders')).toEqual({ due: '{orders}:schedule', entries: '{orders}:schedule:entries' });
    expect(scheduleKeysOf('orders:{orders:3}')).toEqual({
      due: 'orders:{orders:3}:schedule',
      entries: 'orders:{orders:3}:schedule:entries',
    });
  });
});

describe('schedule members', () => {
  it.each(['order-1', 'entry:1-0', 'retry:1-0:g', 'nrs:retry:1-0:g', 'nrs:emit:x', 'nrs:', ''])(
    'keeps the member of event id %p apart from every RetryLater copy',
    (eventId) => {
      const member = eventMember(eventId);
      expect(member.startsWith('nrs:retry:')).toBe(false);
      expect(member).toBe(eventId.startsWith('nrs:') ? `nrs:emit:${eventId}` : eventId);
    },
  );

  it('names a RetryLater copy by entry and group', () => {
    expect(retryMember('1700000000000-3', 'billing:eu')).toBe('nrs:retry:1700000000000-3:billing:eu');
    expect(retryMember('1-0', 'a')).not.toBe(retryMember('1-0', 'b'));
  });
});
