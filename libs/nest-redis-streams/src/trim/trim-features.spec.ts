import type { Redis } from 'ioredis';
import { detectTrimFeatures, isAckedApproxFixed } from './trim-features.js';

/** A stand-in answering INFO with `version` and the ACKED probe with `probe`. */
function fakeRedis(version: string, probe: () => Promise<unknown>): Redis {
  return {
    info: async () => `# Server\r\nredis_version:${version}\r\nredis_mode:standalone\r\n`,
    call: async () => probe(),
  } as unknown as Redis;
}

describe('trim feature detection', () => {
  it.each([
    ['7.0.15', false],
    ['8.0.3', false],
    ['8.2.0', false],
    ['8.2.6', false],
    ['8.2.7', true],
    ['8.3.2', false],
    ['8.4.3', false],
    ['8.4.4', true],
    ['8.6.0', true],
    ['9.0.1', true],
    ['garbage', false],
  ])('trusts approximate ACKED trimming on %s: %s', (version, expected) => {
    expect(isAckedApproxFixed(version)).toBe(expected);
  });

  it('falls back when XTRIM answers ACKED with a syntax error (Redis before 8.2)', async () => {
    const features = await detectTrimFeatures(
      fakeRedis('7.0.15', () => Promise.reject(new Error('ERR syntax error'))),
      's',
    );
    expect(features).toEqual({ redisVersion: '7.0.15', ackedOption: false, useAcked: false });
  });

  it('does not use ACKED on a version with the ~ + ACKED bug even though the option exists', async () => {
    const features = await detectTrimFeatures(
      fakeRedis('8.2.1', () => Promise.resolve(0)),
      's',
    );
    expect(features).toEqual({ redisVersion: '8.2.1', ackedOption: true, useAcked: false });
  });

  it('uses ACKED when the option exists and the version is past the fix', async () => {
    const features = await detectTrimFeatures(
      fakeRedis('8.4.4', () => Promise.resolve(0)),
      's',
    );
    expect(features.useAcked).toBe(true);
  });

  it('does not let a version string alone switch ACKED on (a fork reporting 8.6 without the option)', async () => {
    const features = await detectTrimFeatures(
      fakeRedis('8.6.0', () => Promise.reject(new Error('ERR syntax error'))),
      's',
    );
    expect(features.useAcked).toBe(false);
  });

  it('reads WRONGTYPE as "option parsed" and rethrows other failures', async () => {
    const wrongType = await detectTrimFeatures(
      fakeRedis('8.6.1', () => Promise.reject(new Error('WRONGTYPE Operation'))),
      's',
    );
    expect(wrongType.useAcked).toBe(true);
    await expect(
      detectTrimFeatures(
        fakeRedis('8.6.1', () => Promise.reject(new Error('Connection is closed.'))),
        's',
      ),
    ).rejects.toThrow('Connection is closed.');
  });
});
