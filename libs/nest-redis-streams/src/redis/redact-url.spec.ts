import { redactUrl, redactUrls } from './redact-url.js';

describe('redactUrl: no password in anything the library prints', () => {
  it.each([
    ['redis://app:secret@redis:6379', 'redis://app:***@redis:6379'],
    ['redis://:secret@redis:6379/2', 'redis://redis:6379/2'],
    ['redis://redis:6379', 'redis://redis:6379'],
    ['Redis://app:secret@redis:6379', 'Redis://app:***@redis:6379'],
    ['REDISS://app:secret@redis:6379', 'REDISS://app:***@redis:6379'],
    ['valkey://app:secret@redis:6379', 'valkey://app:***@redis:6379'],
    ['valkeys://:secret@redis:6379', 'valkeys://redis:6379'],
    ['unix://app:secret@/tmp/redis.sock', 'unix://app:***@/tmp/redis.sock'],
    ['postgres://app:secret@db:5432/shop', 'postgres://app:***@db:5432/shop'],
    // The credentials end at the LAST @: a password holding @, : and / is taken out whole.
    ['redis://app:p@ss:w@rd@redis:6379', 'redis://app:***@redis:6379'],
    ['postgres://app:se@cr@et@db/shop', 'postgres://app:***@db/shop'],
    ['redis://app:p/ss?w#rd@redis:6379', 'redis://app:***@redis:6379'],
    ['redis://app:a://b@redis:6379', 'redis://app:***@redis:6379'],
    ['redis://app:my secret@redis:6379', 'redis://app:***@redis:6379'],
    // Without a ':' they may be a password alone (redis-cli reads them so): dropped whole.
    ['redis://secret@redis:6379', 'redis://redis:6379'],
    ['redis://p@ss:word@redis:6379', 'redis://redis:6379'],
    // A seed without a scheme.
    ['app:secret@redis:6379', 'app:***@redis:6379'],
    [':s@cret@redis:6379', 'redis:6379'],
    ['redis:6379', 'redis:6379'],
    // A list (cluster seeds): too much is taken rather than too little.
    ['redis://a:s1@h1:7000,redis://b:s2@h2:7001', 'redis://a:***@h2:7001'],
    ['redis://h1:7000,h2:7001', 'redis://h1:7000,h2:7001'],
  ])('%s shows as %s', (url, shown) => {
    expect(redactUrl(url)).toBe(shown);
  });

  it('redacts every URL inside a message and leaves the rest of it alone', () => {
    expect(
      redactUrls(
        'Could not reach Redis at Redis://app:p@ss@h1:6379 (ECONNREFUSED); cli:root@box tried "valkey://:x@h2" and unix://u:v@/s.',
      ),
    ).toBe(
      'Could not reach Redis at Redis://app:***@h1:6379 (ECONNREFUSED); cli:root@box tried "valkey://h2" and unix://u:***@/s.',
    );
    expect(redactUrls('no url: a@b, c:d@e')).toBe('no url: a@b, c:d@e');
    // In a text, a user name alone is a user name (a placeholder like <postgres://user@host/db>);
    // given as a value, it may be a password alone and goes.
    expect(redactUrls('pass <postgres://user@host:5432/db>')).toBe('pass <postgres://user@host:5432/db>');
    expect(redactUrls('at redis://p@ss:word@host')).toBe('at redis://host');
    // Redacting again changes nothing.
    expect(redactUrls('at redis://app:***@h1:6379 and redis://h2')).toBe('at redis://app:***@h1:6379 and redis://h2');
  });
});
