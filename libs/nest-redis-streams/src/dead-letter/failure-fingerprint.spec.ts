import { FINGERPRINT_FORMAT, failureCause, normaliseFailureMessage } from './failure-fingerprint.js';

describe('normaliseFailureMessage', () => {
  it.each([
    ['Order o-17 has a non-positive amount (-1).', 'Order o-<n> has a non-positive amount (<n>).'],
    ['Order o-233 has a non-positive amount (-250).', 'Order o-<n> has a non-positive amount (<n>).'],
    ['User "alice" not found', 'User <q> not found'],
    ["key 'cart:42' expired", 'key <q> expired'],
    ['row 3f2a1c9e-0b6d-4a8e-9f00-1234567890ab missing', 'row <uuid> missing'],
    ['entry 1700000000000-3 was trimmed', 'entry <id> was trimmed'],
    ['bad pointer 0xDEADBEEF', 'bad pointer <hex>'],
    ['object 65a1f0c2e4b0a1b2c3d4e5f6 locked', 'object <hex> locked'],
    ['customer cus_8f3k2Lq refused', 'customer <id> refused'],
    ['timeout after 1,500.25 ms', 'timeout after <n> ms'],
    ['  spaced\n\tout  ', 'spaced out'],
  ])('%j → %j', (message, pattern) => {
    expect(normaliseFailureMessage(message)).toBe(pattern);
  });

  it('keeps words that merely look like hex (no digit) and caps very long messages', () => {
    expect(normaliseFailureMessage('deadbeef facade')).toBe('deadbeef facade');
    const long = normaliseFailureMessage('x '.repeat(1_000));
    expect(long.length).toBe(301);
    expect(long.endsWith('…')).toBe(true);
  });

  it('does not take a quote inside a quoted value for its end', () => {
    expect(normaliseFailureMessage('name "a \\"b\\" c" taken')).toBe('name <q> taken');
  });
});

describe('failureCause', () => {
  it('gives the same 12-hex fingerprint to messages that differ only in values', () => {
    const a = failureCause('PaymentError', 'Card 4242 declined for order "o-1"');
    const b = failureCause('PaymentError', 'Card 1881 declined for order "o-77"');
    expect(a).toEqual(b);
    expect(a.fingerprint).toMatch(FINGERPRINT_FORMAT);
  });

  it('tells causes apart by class and by pattern', () => {
    const base = failureCause('PaymentError', 'Card 1 declined').fingerprint;
    expect(failureCause('TypeError', 'Card 1 declined').fingerprint).not.toBe(base);
    expect(failureCause('PaymentError', 'Card 1 expired').fingerprint).not.toBe(base);
  });

  it('groups records without an error by their reason', () => {
    const trimmed = failureCause('', '', 'payload-trimmed');
    expect(trimmed.pattern).toBe('(no error recorded: payload-trimmed)');
    expect(failureCause('', '', 'trimmed-undelivered').fingerprint).not.toBe(trimmed.fingerprint);
  });
});
