import { UnsupportedRedisError } from './errors/unsupported-redis.error.js';
import { MIN_REDIS_VERSION, decideRedisFeatures, parseRedisVersion } from './redis-features.js';

describe('decideRedisFeatures', () => {
  it('refuses servers older than 6.2 with a message naming both versions', () => {
    for (const version of ['6.0.16', '5.0.14', '4.0.0', '6.1.9']) {
      expect(() => decideRedisFeatures(version, null)).toThrow(UnsupportedRedisError);
      expect(() => decideRedisFeatures(version, true)).toThrow(
        `Redis ${MIN_REDIS_VERSION} or newer is required (XAUTOCLAIM, used to take over the entries of dead consumers); ` +
          `this server is ${version}. Upgrade Redis.`,
      );
    }
  });

  it('refuses a server whose XAUTOCLAIM is renamed away, whatever its version', () => {
    expect(() => decideRedisFeatures('7.0.15', false)).toThrow(/does not offer XAUTOCLAIM.*rename-command/);
    expect(() => decideRedisFeatures('', false)).toThrow(/version unknown/);
  });

  it('uses the 7.0 stream counters from 7.0 on, and works without them on 6.2', () => {
    expect(decideRedisFeatures('6.2.14', true)).toEqual({ version: '6.2.14', streamCounters: false });
    expect(decideRedisFeatures('6.2.0', null)).toEqual({ version: '6.2.0', streamCounters: false });
    for (const version of ['7.0.0', '7.0.15', '7.2.4', '8.2.1', '10.0.0']) {
      expect(decideRedisFeatures(version, true)).toEqual({ version, streamCounters: true });
    }
  });

  it('accepts an unknown version when XAUTOCLAIM answers (proxies, compatible servers)', () => {
    expect(decideRedisFeatures('', true)).toEqual({ version: '', streamCounters: true });
    expect(decideRedisFeatures('unstable', null)).toEqual({ version: 'unstable', streamCounters: true });
  });

  it('parses major and minor', () => {
    expect(parseRedisVersion('7.0.15')).toEqual([7, 0]);
    expect(parseRedisVersion(' 10.12.1 ')).toEqual([10, 12]);
    expect(parseRedisVersion('x')).toBeNull();
  });
});
