import { InvalidOptionsError } from '../errors/invalid-options.error.js';
import { checkConnectionUrls, lowerRedisScheme, redisUrlForIoredis } from './redis-url-scheme.js';

describe('redisUrlForIoredis', () => {
  it.each([
    ['Rediss://app:pw@h:6380', 'rediss://app:pw@h:6380'],
    ['REDIS://h', 'redis://h'],
    ['redis://h/2', 'redis://h/2'],
    // Only the scheme: the rest (a password in capitals) stays as written.
    ['REDISS://App:PW@H', 'rediss://App:PW@H'],
    ['/tmp/redis.sock', '/tmp/redis.sock'],
  ])('%s connects as %s', (given, seen) => {
    expect(redisUrlForIoredis(given)).toBe(seen);
    expect(lowerRedisScheme(given)).toBe(seen);
  });

  it('refuses valkey:// in any case, naming the URL without its password and the fix', () => {
    expect(() => redisUrlForIoredis('VALKEYS://app:s3cret@h:6380')).toThrow(
      new InvalidOptionsError(
        'Connection URL "VALKEYS://app:***@h:6380": Valkey is reached with redis:// (rediss:// for TLS), the scheme ioredis knows; write rediss://app:***@h:6380.',
      ),
    );
    expect(() => checkConnectionUrls({ cluster: [{ host: 'a', port: 1 }, 'valkey://b:2'] })).toThrow(InvalidOptionsError);
    expect(() => checkConnectionUrls({ host: 'valkey://x' })).not.toThrow();
  });
});
