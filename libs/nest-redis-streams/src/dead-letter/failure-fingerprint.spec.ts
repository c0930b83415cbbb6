import { FINGERPRINT_FORMAT, failureCause, normaliseFailureMessage } from './failure-fingerprint.js';
import { MAX_SCANNED_MESSAGE, scanFailureMessage } from './failure-message-scanner.js';

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
    // Found by failure-fingerprint.property.spec.ts: 1000ms folded to <id>, 5ms to <n>ms.
    ['timeout after 1000ms, 5ms, -20s and 12KB', 'timeout after <n>ms, <n>ms, -<n>s and <n>KB'],
    ['timeout after 1,500.25 ms', 'timeout after <n> ms'],
    ['  spaced\n\tout  ', 'spaced out'],
    ['order 12345678 failed', 'order <n> failed'],
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

// Messages as real libraries write them: what varies per entry folds, the words around it stay.
describe('normaliseFailureMessage on real-world messages', () => {
  it.each([
    // Postgres (pg), TypeORM, Prisma
    ['duplicate key value violates unique constraint "orders_pkey"', 'duplicate key value violates unique constraint <q>'],
    ['Key (id)=(42) already exists.', 'Key (id)=(<n>) already exists.'],
    [
      'null value in column "email" of relation "users" violates not-null constraint',
      'null value in column <q> of relation <q> violates not-null constraint',
    ],
    ['relation "public.orders_2024" does not exist', 'relation <q> does not exist'],
    [
      'Could not find any entity of type "User" matching: {\n  "where": {\n    "id": 42\n  }\n}',
      'Could not find any entity of type <q> matching: { <q>: { <q>: <n> } }',
    ],
    [
      'Invalid `prisma.order.update()` invocation: Record to update not found.',
      'Invalid <q> invocation: Record to update not found.',
    ],
    ['Unique constraint failed on the fields: (`email`)', 'Unique constraint failed on the fields: (<q>)'],
    // HTTP clients, Node
    ['Request failed with status code 503', 'Request failed with status code <n>'],
    ['connect ECONNREFUSED 127.0.0.1:6379', 'connect ECONNREFUSED <n>:<n>'],
    ["Cannot read properties of undefined (reading 'id')", 'Cannot read properties of undefined (reading <q>)'],
    ["ENOENT: no such file or directory, open '/app/data/orders-17.json'", 'ENOENT: no such file or directory, open <q>'],
    ['file /var/data/2024/06/17/o-17.json unreadable', 'file /var/data/<n>/<n>/<n>/o-<n>.json unreadable'],
    ['C:\\data\\o-17.json is locked', 'C:\\data\\o-<n>.json is locked'],
    // ioredis and Redis replies
    [
      'Reached the max retries per request limit (which is 20). Refer to "maxRetriesPerRequest" option for details.',
      'Reached the max retries per request limit (which is <n>). Refer to <q> option for details.',
    ],
    ["READONLY You can't write against a read only replica.", "READONLY You can't write against a read only replica."],
    // JSON-quoted values, ids, UUIDs, numbers, e-mails
    ['payload {"amount":-12.5,"currency":"EUR"} rejected', 'payload {<q>:<n>,<q>:<q>} rejected'],
    ['row 3F2A1C9E-0B6D-4A8E-9F00-1234567890AB missing', 'row <uuid> missing'],
    ['User alice.smith+tag@example.co.uk not found.', 'User <email> not found.'],
    ['mail to bob@example.com bounced (550)', 'mail to <email> bounced (<n>)'],
    // Contractions and names: an apostrophe inside a word is not a quote
    ["Couldn't find customer 'alice'.", "Couldn't find customer <q>."],
    ["O'Brien's order o-17 doesn't exist and won't be retried", "O'Brien's order o-<n> doesn't exist and won't be retried"],
    ["can't parse 'it's broken'", "can't parse <q>"],
    ['It’s ‘alice’ again, don’t retry', 'It’s <q> again, don’t retry'],
    ["the users' e-mails bounced", "the users' e-mails bounced"],
  ])('%j → %j', (message, pattern) => {
    expect(normaliseFailureMessage(message)).toBe(pattern);
  });

  it('puts a contraction and the same cause without one in one group each, whatever the value', () => {
    const causes = (template: (who: string) => string) =>
      new Set(['alice', 'bob', 'carol'].map((who) => failureCause('NotFoundError', template(who)).fingerprint));
    expect(causes((who) => `Couldn't find customer '${who}'.`).size).toBe(1);
    expect(causes((who) => `Customer '${who}' was not found.`).size).toBe(1);
  });
});

// Work per record must not grow with the message: the dead-letter page, the dry run, re-drive by
// cause and the canary fingerprint every record they read, on the event loop.
describe('scanFailureMessage on hostile messages', () => {
  const bound = 5 * MAX_SCANNED_MESSAGE;
  const tenMb = 10 * 1024 * 1024;

  it.each([
    ['a value of "\\ pairs (echoed JSON)', 'value "' + '"\\'.repeat(100_000) + '" rejected'],
    ['"\\ pairs alone', '"\\'.repeat(tenMb / 2)],
    ['deep nesting', '{"a":['.repeat(tenMb / 6)],
    ['a run of double quotes', '"'.repeat(tenMb)],
    ['a run of apostrophes', "'".repeat(tenMb)],
    ['a run of backslashes', '\\'.repeat(tenMb)],
    ['a run of digits', '9'.repeat(tenMb)],
    ['numbers with decimals', '1.'.repeat(tenMb / 2)],
    ['an unterminated quote', 'bad "' + 'x'.repeat(tenMb)],
    ['unterminated quotes of every kind', 'x "\' y ` z \u201c w \u2018 '.repeat(tenMb / 20)],
    ['contractions', "don't ".repeat(tenMb / 6)],
    ['an address with no @', 'a.'.repeat(tenMb / 2)],
    ['almost UUIDs', '3f2a1c9e-0b6d-'.repeat(tenMb / 14)],
    ['letters', 'x'.repeat(tenMb)],
  ])('%s: cut to MAX_SCANNED_MESSAGE, at most 5 steps a character', (_name, message) => {
    const scanned = scanFailureMessage(message);
    expect(scanned.steps).toBeLessThanOrEqual(bound);
    expect(scanned.cut).toBe(message.length > MAX_SCANNED_MESSAGE);
    expect(scanned.pattern.length).toBeLessThanOrEqual(301);
  });

  it('keeps the work bounded below the cut too (a message just short of it)', () => {
    for (const unit of ['"\\', "'", '\\', '{[', "a'b ", '1,'])
      expect(scanFailureMessage(unit.repeat(Math.floor(MAX_SCANNED_MESSAGE / unit.length))).steps).toBeLessThanOrEqual(bound);
  });

  it('gives one cause to long echoes that differ only past the cut', () => {
    const echo = (value: string) => failureCause('ValidationError', `bad value "${value}" for amount`).fingerprint;
    expect(echo('"\\'.repeat(70_000))).toBe(echo('"\\'.repeat(100_000)));
    expect(echo('x'.repeat(200_000))).toBe(echo('y'.repeat(300_000)));
    // Below the cut the quote closes and the words after it count.
    expect(failureCause('E', 'bad "v" for amount').fingerprint).not.toBe(failureCause('E', 'bad "v" for currency').fingerprint);
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
