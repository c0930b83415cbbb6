import {
  auditRefusalStream,
  blockedKeysKey,
  claimEpochKey,
  deadLetterSourceStream,
  deadLetterStreamsOf,
  defaultDeadLetterStream,
  groupHistoryKey,
  handlerErrorsKey,
  heldEntriesKey,
  isDeadLetterStream,
  keyBeside,
  partitionDeadLetterPattern,
  partitionOfKey,
  partitionOwnerKey,
  partitionStream,
  probeKeyCandidate,
  probeKeyNear,
  replyStreamPrefix,
  slotOf,
  trimAuditKey,
  withoutDeadLetterSuffix,
} from './index.js';

describe('key names', () => {
  it('puts a key beside its own hash tag, or makes the name the tag', () => {
    expect(keyBeside('orders:{orders:3}', 'nrs-owner:g')).toBe('orders:{orders:3}:nrs-owner:g');
    expect(keyBeside('orders', 'x')).toBe('{orders}:x');
    expect(keyBeside('a{b', 'x')).toBe('{ab}:x');
    expect(slotOf(keyBeside('orders', 'x'))).toBe(slotOf('orders'));
    expect(partitionOwnerKey('orders', 'g')).toBe('{orders}:nrs-owner:g');
    expect(claimEpochKey('orders', 'g')).toBe('{orders}:nrs-claims:g');
    expect(claimEpochKey('orders:{orders:3}', 'g')).toBe('orders:{orders:3}:nrs-claims:g');
    expect(handlerErrorsKey('orders', 'g')).toBe('{orders}:nrs-errors:g');
  });

  it('names the blocked keys and held streams of a group beside the stream, the group length-prefixed', () => {
    expect(blockedKeysKey('orders', 'g')).toBe('{orders}:nrs-blocked:g');
    expect(heldEntriesKey('orders', 'g', 'k')).toBe('{orders}:nrs-held:1:g:k');
    expect(heldEntriesKey('orders', 'a', 'b:c')).not.toBe(heldEntriesKey('orders', 'a:b', 'c'));
    expect(slotOf(heldEntriesKey('orders', 'a:b', 'c'))).toBe(slotOf('orders'));
  });

  it('reads a partition stream key back, and nothing else', () => {
    expect(partitionOfKey(partitionStream('orders', 3))).toEqual({ stream: 'orders', partition: 3 });
    expect(partitionOfKey('orders:{payments:3}')).toBeNull();
    expect(partitionOfKey('orders')).toBeNull();
  });

  it('names dead-letter streams and reads them back', () => {
    expect(defaultDeadLetterStream('orders', false)).toBe('orders:dlq');
    expect(defaultDeadLetterStream('orders', true)).toBe('{orders}:dlq');
    expect(deadLetterStreamsOf('orders', 2)).toEqual(['orders:dlq', 'orders:{orders:0}:dlq', 'orders:{orders:1}:dlq']);
    expect(isDeadLetterStream('orders:dlq')).toBe(true);
    expect(isDeadLetterStream('orders')).toBe(false);
    expect(deadLetterSourceStream('{orders}:dlq')).toBe('orders');
    expect(deadLetterSourceStream('orders:{orders:3}:dlq')).toBe('orders:{orders:3}');
    expect(withoutDeadLetterSuffix('orders:{orders:3}:dlq')).toBe('orders:{orders:3}');
    expect(partitionDeadLetterPattern('a*b')).toBe('a\\*b:{*}:dlq');
  });

  it('names the audit, reply, trim-audit and probe keys', () => {
    expect(auditRefusalStream('nrs:console:audit')).toBe('nrs:console:audit:refused');
    expect(groupHistoryKey('nrs:console:audit')).toBe('nrs:console:audit:history');
    expect(replyStreamPrefix('app:')).toBe('app:nrs:replies:');
    expect(trimAuditKey('orders')).toBe('{orders}:trim-audit');
    expect(trimAuditKey('orders:{orders:1}')).toBe('orders:{orders:1}:trim-audit');
    expect(probeKeyNear('orders')).toBe('orders:nrs-capability-probe');
    expect(probeKeyCandidate('nrs:capability-probe', 7)).toBe('nrs:capability-probe:{7}');
  });
});
