'use strict';

module.exports = async function globalTeardown() {
  const redis = globalThis.__NRS_REDIS__;
  if (redis) await redis.stop();
};
