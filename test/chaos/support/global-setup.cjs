'use strict';
// The chaos suite's ledger: a redis-server of its own that no scenario kills, so it stays the
// truth about what was produced and processed. Scenarios start (and kill) their own data Redis.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startRedis } = require('../../../scripts/lib/redis-process.cjs');

module.exports = async function chaosGlobalSetup() {
  const ledger = await startRedis({ appendonly: false });
  globalThis.__CHAOS_LEDGER__ = ledger;
  globalThis.__CHAOS_STARTED__ = Date.now();
  process.env.CHAOS_LEDGER_URL = ledger.url;
  process.env.CHAOS_ROWS_FILE = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'nrs-chaos-')), 'rows.jsonl');
  fs.writeFileSync(process.env.CHAOS_ROWS_FILE, '');
};
