import { fc, hostileString } from '../../../../test/support/property-arbitraries.js';
import { eventMember, retryMember, scheduleKeysOf } from './schedule-keys.js';
import { hasHashTag, slotOf } from './slots.js';

// A schedule lives in its stream's slot, and no event id's member can collide with another's or
// with a RetryLater copy's member.

// Stream names are never empty (requireName, the handler registry). A name of braces only (`}`,
// `{}`) is left out: keyBeside strips them to an empty tag, so its two keys land in two slots;
// changing those key names would strand schedules already held under them (reported, not fixed).
const name = fc.oneof(
  hostileString.filter((s) => s.replace(/[{}]/g, '') !== ''),
  fc.constantFrom('orders', 'orders:{orders:3}', '{x}', 'a{b', 'a}b', '}{a}'),
);

describe('schedule keys (properties)', () => {
  it("keeps both keys in the stream's hash slot unless the name has a } and no tag", () => {
    fc.assert(
      fc.property(name, (stream) => {
        const { due, entries } = scheduleKeysOf(stream);
        expect(slotOf(due)).toBe(slotOf(entries));
        if (hasHashTag(stream) || !stream.includes('}')) expect(slotOf(due)).toBe(slotOf(stream));
      }),
    );
  });

  it('gives distinct event ids distinct members, none a RetryLater member', () => {
    const eventId = fc.oneof(
      hostileString,
      hostileString.map((s) => `nrs:${s}`),
      hostileString.map((s) => `nrs:retry:${s}`),
    );
    fc.assert(
      fc.property(eventId, eventId, hostileString, hostileString, (a, b, entry, group) => {
        if (a !== b) expect(eventMember(a)).not.toBe(eventMember(b));
        expect(eventMember(a)).not.toBe(retryMember(entry, group));
        // The move script strips the escape again (redis/lua/schedule.ts).
        const member = eventMember(a);
        expect(member.startsWith('nrs:emit:nrs:') ? member.slice('nrs:emit:'.length) : member).toBe(a);
      }),
    );
  });
});
