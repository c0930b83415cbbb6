'use strict';
// The servers the test matrix runs against, built from Debian's source packages into a cache
// folder outside the repository: ${XDG_CACHE_HOME:-~/.cache}/nest-redis-streams/servers/<name>-<version>/.
// Each folder holds bin/<name>-server and bin/redis-server (the name the tests spawn), and a
// BUILT stamp written last; a folder without it (an interrupted build) is built again. A new
// version is a new folder, so changing a version below is what triggers a rebuild.
//
// How: a deb-src entry for unstable and experimental on the mirror the machine's apt sources
// already use, `apt-get source --download-only <pkg>=<version>` (the ordinary client), unpacked
// without Debian's patches (they switch to system Lua/jemalloc/hiredis; upstream's vendored
// copies build with make), then `make BUILD_TLS=yes`; the server and cli binaries are copied.
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

/** The matrix: Debian's redis-server package (7.0 on bookworm) is the third server, from PATH. */
const SERVERS = [
  { name: 'redis', pkg: 'redis', version: '5:8.6.3-1', suite: 'experimental', label: 'Redis 8.6.3' },
  { name: 'valkey', pkg: 'valkey', version: '9.1.2-1', suite: 'unstable', label: 'Valkey 9.1.2' },
];

const SOURCES_FILE = '/etc/apt/sources.list.d/nest-redis-streams-src.sources';

function cacheRoot() {
  if (process.env.NRS_SERVER_CACHE) return process.env.NRS_SERVER_CACHE;
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'nest-redis-streams', 'servers');
}

/** 5:8.6.3-1 → 8.6.3-1 (the epoch is not part of a folder name). */
function folderVersion(version) {
  return version.replace(/^\d+:/, '');
}

function serverDir(server) {
  return path.join(cacheRoot(), `${server.name}-${folderVersion(server.version)}`);
}

/** The binary the tests spawn (NRS_REDIS_SERVER) for a built server, or null when not built. */
function builtBinary(server) {
  const dir = serverDir(server);
  const stamp = path.join(dir, 'BUILT');
  if (!fs.existsSync(stamp) || fs.readFileSync(stamp, 'utf8').trim() !== server.version) return null;
  const bin = path.join(dir, 'bin', 'redis-server');
  return fs.existsSync(bin) ? bin : null;
}

function run(cmd, args, { cwd, log, env } = {}) {
  const res = spawnSync(cmd, args, {
    cwd,
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive', ...env },
  });
  if (log) fs.appendFileSync(log, `$ ${cmd} ${args.join(' ')}\n${res.stdout || ''}${res.stderr || ''}\n`);
  if (res.status !== 0) {
    const tail = `${res.stdout || ''}${res.stderr || ''}`.split('\n').slice(-25).join('\n');
    throw new Error(`${cmd} ${args.join(' ')} failed (exit ${res.status})${log ? `, log: ${log}` : ''}:\n${tail}`);
  }
  return res.stdout || '';
}

/**
 * The Debian mirror the machine's apt sources use for its main archive (deb822 .sources files or
 * one-line sources.list entries), so the deb-src entry goes where apt already goes.
 */
function debianMirror() {
  const found = [];
  const files = ['/etc/apt/sources.list'];
  const dir = '/etc/apt/sources.list.d';
  if (fs.existsSync(dir)) for (const f of fs.readdirSync(dir)) files.push(path.join(dir, f));
  for (const file of files) {
    if (file === SOURCES_FILE || !/\.(list|sources)$/.test(file) || !fs.existsSync(file)) continue;
    const text = fs.readFileSync(file, 'utf8');
    for (const m of text.matchAll(/^URIs:\s*(\S+)/gm)) found.push(m[1]);
    for (const m of text.matchAll(/^deb(?:-src)?\s+(?:\[[^\]]*\]\s+)?(\S+)\s+\S+\s+main/gm)) found.push(m[1]);
  }
  const mirror = found.find((u) => /\/debian\/?$/.test(u) && !/security/.test(u));
  if (!mirror) throw new Error(`No Debian mirror found in ${files.join(', ')}: add a deb-src entry by hand.`);
  return mirror.replace(/\/$/, '');
}

/** Adds the deb-src entry (once) and refreshes apt's lists when a wanted version is not known yet. */
function ensureSourceEntry(log) {
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const wanted = [
    'Types: deb-src',
    `URIs: ${debianMirror()}`,
    `Suites: ${[...new Set(SERVERS.map((s) => s.suite))].join(' ')}`,
    'Components: main',
    'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg',
    '',
  ].join('\n');
  const current = fs.existsSync(SOURCES_FILE) ? fs.readFileSync(SOURCES_FILE, 'utf8') : '';
  if (current === wanted) return false;
  if (!isRoot) throw new Error(`Building the test servers needs root to add ${SOURCES_FILE}:\n${wanted}`);
  fs.writeFileSync(SOURCES_FILE, wanted);
  run('apt-get', ['update', '-qq'], { log });
  return true;
}

function ensureBuildTools(log) {
  const need = [];
  const has = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
  if (!has('make') || !has('cc')) need.push('build-essential');
  if (!has('dpkg-source')) need.push('dpkg-dev');
  if (!has('pkg-config')) need.push('pkg-config');
  if (!fs.existsSync('/usr/include/openssl/ssl.h')) need.push('libssl-dev');
  if (need.length === 0) return;
  run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...need], { log });
}

/**
 * Builds one server into its cache folder unless that version is built already. Returns the
 * path of its bin/redis-server.
 */
function buildServer(server, { log: say = () => {}, jobs = 2 } = {}) {
  const existing = builtBinary(server);
  if (existing) return existing;
  const dir = serverDir(server);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const log = path.join(dir, 'build.log');
  const work = fs.mkdtempSync(path.join(os.tmpdir(), `nrs-build-${server.name}-`));
  try {
    ensureBuildTools(log);
    say(`${server.label}: fetching Debian source package ${server.pkg}=${server.version} (${server.suite})`);
    try {
      run('apt-get', ['source', '--download-only', `${server.pkg}=${server.version}`], { cwd: work, log });
    } catch {
      // apt's lists may predate the version: refresh them once and try again.
      if (!ensureSourceEntry(log)) run('apt-get', ['update', '-qq'], { log });
      run('apt-get', ['source', '--download-only', `${server.pkg}=${server.version}`], { cwd: work, log });
    }
    const dsc = fs.readdirSync(work).find((f) => f.endsWith('.dsc'));
    if (!dsc) throw new Error(`apt-get source left no .dsc in ${work}`);
    run('dpkg-source', ['--skip-patches', '-x', dsc, 'src'], { cwd: work, log });
    const src = path.join(work, 'src');
    say(`${server.label}: building (make -j${jobs} BUILD_TLS=yes), log ${log}`);
    // -O2 without LTO: the same server, linked in seconds instead of minutes on two cores.
    const makeArgs = [`-j${jobs}`, 'BUILD_TLS=yes', 'USE_SYSTEMD=no', 'OPTIMIZATION=-O2'];
    run('make', makeArgs, { cwd: src, log });
    // Copied rather than `make install`: a new PREFIX counts as changed build settings and relinks.
    const bin = path.join(dir, 'bin');
    fs.mkdirSync(bin, { recursive: true });
    for (const tool of ['server', 'cli']) {
      const own = path.join(bin, `${server.name}-${tool}`);
      fs.copyFileSync(path.join(src, 'src', `${server.name}-${tool}`), own);
      fs.chmodSync(own, 0o755);
      const alias = path.join(bin, `redis-${tool}`);
      if (!fs.existsSync(alias)) fs.symlinkSync(own, alias);
    }
    const alias = path.join(bin, 'redis-server');
    run(alias, ['--version'], { log });
    fs.writeFileSync(path.join(dir, 'BUILT'), `${server.version}\n`);
    say(`${server.label}: built ${alias}`);
    return alias;
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

module.exports = { SERVERS, cacheRoot, serverDir, builtBinary, buildServer, ensureBuildTools, ensureSourceEntry, debianMirror };
