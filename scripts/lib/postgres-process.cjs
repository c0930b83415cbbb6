'use strict';
// Starts and stops private PostgreSQL clusters for the inbox/outbox tests and the demo, the way
// redis-process.cjs does for Redis: a fresh data folder in the temp dir, a free loopback port,
// no password (trust on loopback only). postgres refuses to run as root, so when this process is
// root the server runs as the `postgres` user that Debian's package creates.
// CommonJS so that both the ESM scripts and Jest (which loads tests as CommonJS) can require it.
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { freePort } = require('./redis-process.cjs');

const INSTALL_HINT =
  'PostgreSQL server binaries were not found (looked in /usr/lib/postgresql/*/bin and on PATH). ' +
  'Install them (Debian/Ubuntu: `apt-get install -y postgresql`) or point DATABASE_URL at a running PostgreSQL.';

/** The folder holding initdb and postgres: PG_BIN, Debian's newest /usr/lib/postgresql/N/bin, or PATH. */
function findBinDir() {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const root = '/usr/lib/postgresql';
  if (fs.existsSync(root)) {
    const versions = fs
      .readdirSync(root)
      .filter((v) => fs.existsSync(path.join(root, v, 'bin', 'postgres')))
      .sort((a, b) => Number(b) - Number(a));
    if (versions.length) return path.join(root, versions[0], 'bin');
  }
  const which = spawnSync('sh', ['-c', 'command -v postgres'], { encoding: 'utf8' });
  if (which.status === 0) return path.dirname(which.stdout.trim());
  throw new Error(INSTALL_HINT);
}

const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0;

/** uid/gid of the user the server runs as: `postgres` when we are root, else ourselves. */
function serverUser() {
  if (!isRoot()) return {};
  const id = (flag) => spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' });
  const uid = id('-u');
  const gid = id('-g');
  if (uid.status !== 0 || gid.status !== 0) {
    throw new Error('Running as root, but there is no `postgres` user to run the server as. ' + INSTALL_HINT);
  }
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

function canConnect(port) {
  return new Promise((resolve) => {
    const sock = net.connect({ port, host: '127.0.0.1' });
    const done = (ok) => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(500, () => done(false));
    sock.on('error', () => done(false));
    sock.on('connect', () => done(true));
  });
}

/**
 * A postgres child process with its own cluster folder. `kill()` ends it hard (SIGKILL: the next
 * start runs crash recovery from the WAL, as after a real crash) and `start()` brings it back on
 * the same port and folder.
 */
class PostgresProcess {
  constructor({ port, dir, binDir, user }) {
    this.port = port;
    this.dir = dir;
    this.binDir = binDir;
    this.user = user;
    this.child = null;
  }

  /** Connection URL of the `postgres` database as the `postgres` superuser. */
  get url() {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  async start() {
    const args = ['-D', path.join(this.dir, 'data'), '-p', String(this.port), '-h', '127.0.0.1', '-k', this.dir];
    // Test settings: durability as in production (fsync stays on), small footprint.
    args.push('-c', 'shared_buffers=16MB', '-c', 'max_connections=100', '-c', 'log_min_messages=fatal');
    this.child = spawn(path.join(this.binDir, 'postgres'), args, { stdio: 'ignore', ...this.user });
    const child = this.child;
    let exited = false;
    child.once('exit', () => (exited = true));
    const deadline = Date.now() + 20_000;
    // A TCP connect can succeed while the server still says "starting up"; pg_isready knows.
    for (;;) {
      if (exited) throw new Error(`postgres exited at start (port ${this.port}, dir ${this.dir}).`);
      if ((await canConnect(this.port)) && this.isReady()) return this;
      if (Date.now() > deadline) throw new Error(`Timed out after 20000 ms waiting for postgres on port ${this.port}.`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  isReady() {
    const ready = spawnSync(path.join(this.binDir, 'pg_isready'), ['-h', '127.0.0.1', '-p', String(this.port), '-q']);
    return ready.status === 0;
  }

  /** Ends the process with a signal and waits until it is gone. */
  async kill(signal = 'SIGKILL') {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((r) => child.once('exit', r));
    child.kill(signal);
    await gone;
    this.child = null;
  }

  async restart() {
    await this.kill('SIGKILL');
    // A SIGKILLed postmaster leaves backends behind for a moment; they hold the shared memory.
    await new Promise((r) => setTimeout(r, 200));
    await this.start();
  }

  /** Fast shutdown (SIGINT), then removes the cluster folder. */
  async stop() {
    await this.kill('SIGINT');
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Creates a cluster in a temp folder and starts postgres on a free loopback port. */
async function startPostgres(options = {}) {
  const binDir = findBinDir();
  const user = serverUser();
  const port = options.port || (await freePort());
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nrs-pg-'));
  if (user.uid !== undefined) fs.chownSync(dir, user.uid, user.gid);
  const init = spawnSync(
    path.join(binDir, 'initdb'),
    ['-D', path.join(dir, 'data'), '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C'],
    { encoding: 'utf8', cwd: dir, ...user },
  );
  if (init.status !== 0) throw new Error(`initdb failed in ${dir}: ${init.stderr || init.stdout}`);
  return new PostgresProcess({ port, dir, binDir, user }).start();
}

module.exports = { startPostgres, PostgresProcess, findBinDir, INSTALL_HINT };
