'use strict';
// One private redis-server for the whole integration suite (tests use unique stream and group
// names). Tests that restart or kill Redis start their own instance instead.
const { startRedis } = require('../../scripts/lib/redis-process.cjs');

module.exports = async function globalSetup() {
  if (process.env.REDIS_URL) return;
  const redis = await startRedis({ appendonly: false });
  globalThis.__NRS_REDIS__ = redis;
  process.env.REDIS_URL = redis.url;
};
