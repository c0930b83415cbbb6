import type { Redis } from 'ioredis';
import { type CapabilityName, probeCapabilities } from '../../libs/nest-redis-streams/src/redis/capabilities.js';

/**
 * What the suite's server offers, probed once before the file's tests: each test asserts what
 * must hold there (the new path where present, the old one elsewhere), never something weaker.
 */
export function capabilitiesOf(redis: Redis): () => Record<CapabilityName, boolean> {
  let all: Record<CapabilityName, boolean> | null = null;
  beforeAll(async () => {
    all = (await probeCapabilities(redis)).all;
  });
  return () => {
    if (!all) throw new Error('capabilitiesOf(redis) is read inside tests, after beforeAll probed the server.');
    return all;
  };
}
