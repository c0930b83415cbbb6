'use strict';
// The Debian packages the test suite needs besides redis-server: postgresql (inbox/outbox
// tests), chromium (the console in a real browser) and prometheus (promtool checks the alert
// rules). `npm test` installs the missing ones on a fresh machine when it may (root with
// apt-get, NRS_NO_INSTALL unset), like it does redis-server; otherwise it says what to install.
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const { ensureRedisServer } = require('./redis-process.cjs');

const PACKAGES = [
  {
    name: 'postgresql',
    present: () =>
      fs
        .readdirSync('/usr/lib/postgresql', { withFileTypes: true })
        .some((d) => fs.existsSync(`/usr/lib/postgresql/${d.name}/bin/postgres`)),
  },
  { name: 'chromium', present: () => onPath('chromium') },
  { name: 'prometheus', present: () => onPath('promtool') },
];

function onPath(command) {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

function isPresent(pkg) {
  try {
    return pkg.present();
  } catch {
    return false;
  }
}

/** Installs the missing packages, or throws a message naming them and the command that installs them. */
function ensureTestPackages({ log = () => {} } = {}) {
  const missing = PACKAGES.filter((pkg) => !isPresent(pkg)).map((pkg) => pkg.name);
  if (missing.length === 0) return;
  const hint = `The tests need the Debian packages ${missing.join(', ')}: apt-get install -y --no-install-recommends ${missing.join(' ')}.`;
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!isRoot || !onPath('apt-get') || process.env.NRS_NO_INSTALL === '1') throw new Error(hint);
  log(`installing Debian packages for the tests: ${missing.join(', ')} (one time)...`);
  const opts = { stdio: 'ignore', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } };
  spawnSync('apt-get', ['update', '-qq'], opts);
  const res = spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing], opts);
  const still = PACKAGES.filter((pkg) => missing.includes(pkg.name) && !isPresent(pkg)).map((pkg) => pkg.name);
  if (res.status !== 0 || still.length > 0)
    throw new Error(`apt-get install failed for ${still.join(', ') || missing.join(', ')}. ${hint}`);
}

/**
 * What every test run needs on the machine: redis-server and the packages above. Prints what is
 * missing and exits 1 when it cannot install it.
 */
function ensureTestMachineOrExit() {
  try {
    ensureRedisServer({ log: (m) => console.log(m) });
    ensureTestPackages({ log: (m) => console.log(m) });
  } catch (err) {
    console.error(err.message);
    process.exit(1);
  }
}

module.exports = { ensureTestPackages, ensureTestMachineOrExit };
