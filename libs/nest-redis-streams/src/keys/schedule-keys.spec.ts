import { partitionStream, scheduleKeysOf, slotOf } from './index.js';

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
