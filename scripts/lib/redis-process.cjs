'use strict';
// Starts and stops private redis-server processes for the demo, the tests and the benchmarks.
// CommonJS so that both the ESM scripts and Jest (which loads tests as CommonJS) can require it.
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const INSTALL_HINT =
  'redis-server was not found on PATH. Install it (Debian/Ubuntu: `apt-get install -y redis-server`), ' +
  'point REDIS_URL at a running Redis 7+, or start one with `docker compose up -d redis`.';

/**
 * The redis-server binary every test, benchmark and the demo start: NRS_REDIS_SERVER when set (an
 * absolute path, e.g. a server `npm run test:servers` built: Redis 8.6, Valkey 9.1), else
 * `redis-server` from PATH.
 */
function redisServerBinary() {
  return process.env.NRS_REDIS_SERVER || 'redis-server';
}

/** The redis-cli beside NRS_REDIS_SERVER's binary when there is one, else `redis-cli` from PATH. */
function redisCliBinary() {
  const server = process.env.NRS_REDIS_SERVER;
  if (!server) return 'redis-cli';
  const dir = path.dirname(server);
  const name = path.basename(server).replace(/server$/, 'cli');
  for (const candidate of [path.join(dir, name), path.join(dir, 'redis-cli')]) {
    if (fs.existsSync(candidate)) return candidate;
  }
  return 'redis-cli';
}

function hasRedisServer() {
  const server = process.env.NRS_REDIS_SERVER;
  if (server) {
    try {
      fs.accessSync(server, fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  }
  return spawnSync('sh', ['-c', 'command -v redis-server'], { stdio: 'ignore' }).status === 0;
}

/**
 * Makes sure a redis-server binary exists. Installs Debian's package when running as root with
 * apt-get available (CI, fresh machines), unless NRS_NO_INSTALL=1; otherwise throws a message
 * that says what to do.
 */
function ensureRedisServer({ log = () => {} } = {}) {
  if (hasRedisServer()) return;
  if (process.env.NRS_REDIS_SERVER) {
    throw new Error(
      `NRS_REDIS_SERVER=${process.env.NRS_REDIS_SERVER} is not an executable file: point it at a redis-server ` +
        'or valkey-server binary (node scripts/servers/build-servers.mjs builds them), or unset it to use PATH.',
    );
  }
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const hasApt = spawnSync('sh', ['-c', 'command -v apt-get'], { stdio: 'ignore' }).status === 0;
  if (!isRoot || !hasApt || process.env.NRS_NO_INSTALL === '1') throw new Error(INSTALL_HINT);
  log('redis-server is missing: installing Debian package redis-server (one time)...');
  const opts = { stdio: 'ignore', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } };
  spawnSync('apt-get', ['update', '-qq'], opts);
  const res = spawnSync('apt-get', ['install', '-y', '-qq', 'redis-server'], opts);
  if (res.status !== 0 || !hasRedisServer()) throw new Error(`apt-get install redis-server failed. ${INSTALL_HINT}`);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function ping(port) {
  return new Promise((resolve) => {
    const sock = net.connect({ port, host: '127.0.0.1' });
    let buf = '';
    const done = (ok) => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(500, () => done(false));
    sock.on('error', () => done(false));
    sock.on('connect', () => sock.write('PING\r\n'));
    sock.on('data', (d) => {
      buf += d.toString();
      if (buf.includes('\r\n')) done(buf.startsWith('+PONG'));
    });
  });
}

async function waitFor(check, { timeoutMs, what }) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}.`);
}

/**
 * A redis-server child process on a loopback port, with its own data folder. `kill()` ends it
 * hard (SIGKILL) and `start()` brings it back on the same port and folder, so AOF-persisted
 * streams survive the way they would in production.
 */
class RedisProcess {
  constructor({ port, dir, appendonly = true, appendfsync = 'everysec', extraArgs = [] }) {
    this.port = port;
    this.dir = dir;
    this.appendonly = appendonly;
    this.appendfsync = appendfsync;
    this.extraArgs = extraArgs;
    this.child = null;
  }

  get url() {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start() {
    const args = [
      '--port',
      String(this.port),
      '--bind',
      '127.0.0.1',
      '--dir',
      this.dir,
      '--save',
      '',
      '--appendonly',
      this.appendonly ? 'yes' : 'no',
      '--appendfsync',
      this.appendfsync,
      '--daemonize',
      'no',
      '--loglevel',
      'warning',
      ...this.extraArgs,
    ];
    this.child = spawn(redisServerBinary(), args, { stdio: 'ignore', detached: false });
    const child = this.child;
    let exited = false;
    child.once('exit', () => (exited = true));
    await waitFor(
      async () => {
        if (exited) throw new Error(`redis-server exited at start (port ${this.port}, dir ${this.dir}).`);
        return ping(this.port);
      },
      { timeoutMs: 10000, what: `redis-server on port ${this.port}` },
    );
    return this;
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
    await this.start();
  }

  async stop() {
    await this.kill('SIGTERM');
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * Starts a redis-server made by `make(port)` on a port that was free a moment ago. Another
 * process (a parallel test worker) can take that port, or a cluster node's bus port (port +
 * 10000), before redis-server binds it; then it exits at start, and another free port is tried.
 */
async function startOnFreePort(make, attempts = 5) {
  for (let attempt = 1; ; attempt++) {
    const node = make(await freePort());
    try {
      return await node.start();
    } catch (err) {
      if (attempt >= attempts || !/exited at start/.test(String(err && err.message))) throw err;
    }
  }
}

/** Starts a private redis-server on a free loopback port. */
async function startRedis(options = {}) {
  ensureRedisServer(options);
  const dir = options.dir || fs.mkdtempSync(path.join(os.tmpdir(), 'nrs-redis-'));
  if (options.port) return new RedisProcess({ ...options, dir }).start();
  return startOnFreePort((port) => new RedisProcess({ ...options, port, dir }));
}

module.exports = {
  startRedis,
  startOnFreePort,
  ensureRedisServer,
  freePort,
  redisServerBinary,
  redisCliBinary,
  RedisProcess,
  INSTALL_HINT,
};
