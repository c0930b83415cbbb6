#!/usr/bin/env node
// `npm run test:package` (run by .ci/run after `npm test`): proves the published package works in
// the apps NestJS users have. It packs the library, installs the tarball into two fixture apps
// (test/package/: a Nest 11 CommonJS app as `nest new --strict` makes it, with TypeScript 5,
// ts-jest, Terminus 11 and ioredis 5; a Nest 12 ESM app with TypeScript 7, Terminus 12 and
// ioredis 6, type-checked with skipLibCheck off and no optional peer installed), compiles each
// with its own tsconfig, runs the CommonJS app's ts-jest spec, then on Node 20.19, 22 and 24 (binaries
// from the registry's `node` package) starts each app against a real redis-server, sends 100
// events through its @EventPattern handler and checks XPENDING is 0 and /health/ready answers
// up, then degraded once the group has a dead letter. Each app loads every entry point: it first
// calls listMigrations() and applyMigrations() from `nest-redis-streams/database`
// (src/migrations.check.ts), so both builds must find the package's migrations/, and it mounts the
// console from `nest-redis-streams/console`, whose overview must list the app's stream and group.
// The CommonJS app is also type-checked under `moduleResolution: node10` (tsconfig.node10.json),
// where TypeScript ignores `exports` and finds the subpaths' types through `typesVersions`.
// Prints a table; exits non-zero on any failure.
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const require = createRequire(import.meta.url);
const { Redis } = require('ioredis');
const { startRedis, ensureRedisServer } = require('./lib/redis-process.cjs');

const root = resolve(import.meta.dirname, '..');
const NODE_VERSIONS = (process.env.NRS_PACKAGE_NODE_VERSIONS ?? '20.19.0,22.23.3,24.9.0').split(',');
const FIXTURES = ['nest11-cjs', 'nest12-esm'];
const EVENTS = 100;
const work = mkdtempSync(join(tmpdir(), 'nrs-package-'));
const nodeCache = join(tmpdir(), 'nrs-node-binaries');
const rows = [];
let failures = 0;

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { encoding: 'utf8', ...options });
  if (result.status !== 0) {
    throw new Error(
      `${[command, ...args].join(' ')} failed (exit ${result.status}):\n${result.stdout}\n${result.stderr}`.slice(0, 6000),
    );
  }
  return result.stdout;
}

function step(fixture, node, what, action) {
  const started = Date.now();
  return Promise.resolve()
    .then(action)
    .then(
      (detail) => rows.push({ fixture, node, what, result: 'ok', detail: detail ?? '', ms: Date.now() - started }),
      (err) => {
        failures++;
        rows.push({
          fixture,
          node,
          what,
          result: 'FAIL',
          detail: String(err.message ?? err).split('\n')[0],
          ms: Date.now() - started,
        });
        console.error(`--- ${fixture} / ${node} / ${what}\n${err.stack ?? err}`);
      },
    );
}

function nodeBinary(version) {
  const dir = join(nodeCache, version);
  const bin = join(dir, 'node_modules', 'node', 'bin', 'node');
  if (!existsSync(bin)) {
    mkdirSync(dir, { recursive: true });
    run('npm', ['install', '--no-save', '--no-audit', '--no-fund', '--prefix', dir, `node@${version}`]);
  }
  return bin;
}

async function waitFor(check, what, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check().catch((err) => {
      if (/the app exited/.test(err?.message ?? '')) throw err;
      return null;
    });
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function readiness(port) {
  const response = await fetch(`http://127.0.0.1:${port}/health/ready`);
  return { code: response.status, body: await response.json() };
}

async function exercise(appDir, nodeBin, redisUrl, label) {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  const stream = `pkg:${label}:${Date.now().toString(36)}`;
  const port = await freePort();
  const app = spawn(nodeBin, ['dist/main.js'], {
    cwd: appDir,
    env: { ...process.env, REDIS_URL: redisUrl, PORT: String(port), STREAM: stream },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  app.stdout.on('data', (d) => (output += d));
  app.stderr.on('data', (d) => (output += d));
  const exited = new Promise((r) => app.once('exit', (code, signal) => r({ code, signal })));
  try {
    await waitFor(async () => {
      if (app.exitCode !== null || app.signalCode !== null) throw new Error(`the app exited (${app.exitCode ?? app.signalCode})`);
      return output.includes('fixture ready');
    }, 'the app to start');
    // listMigrations() and applyMigrations() from the build this app loads (dist/cjs or dist/).
    const migrations = /fixture migrations (\S+)/.exec(output)?.[1];
    const shipped = readdirSync(join(root, 'libs/nest-redis-streams/migrations'))
      .filter((name) => name.endsWith('.sql'))
      .sort()
      .join(',');
    if (migrations !== shipped) throw new Error(`migrations: ${migrations ?? 'no line'}, expected ${shipped}`);
    const pipeline = redis.pipeline();
    for (let i = 0; i < EVENTS; i++) {
      pipeline.xadd(
        stream,
        '*',
        'v',
        'nrs/1',
        'event_id',
        `e${i}`,
        'data',
        JSON.stringify({ id: `o${i}` }),
        'published_at',
        String(Date.now()),
      );
    }
    await pipeline.exec();
    await waitFor(async () => {
      const [group] = (await redis.xinfo('GROUPS', stream)).map(pairs);
      const [pending] = await redis.xpending(stream, 'billing');
      return group && Number(group.lag) === 0 && Number(pending) === 0 && Number(group['entries-read']) === EVENTS;
    }, `${EVENTS} events handled and acked (XPENDING 0)`);
    const up = await readiness(port);
    if (up.code !== 200 || up.body.details['redis-streams'].status !== 'up') throw new Error(`ready: ${JSON.stringify(up)}`);
    await redis.xadd(
      `${stream}:dlq`,
      '*',
      'dlq:reason',
      'max-deliveries',
      'dlq:stream',
      stream,
      'dlq:id',
      '0-1',
      'dlq:group',
      'billing',
    );
    const consoleGroups = await consoleOverview(port, stream);
    if (!consoleGroups.includes('billing'))
      throw new Error(`console overview: groups ${consoleGroups.join(',') || 'none'} on ${stream}`);
    const degraded = await readiness(port);
    const details = degraded.body.details['redis-streams'];
    const isDegraded = details.status === 'degraded' || (details.status === 'up' && details.degraded === true);
    if (degraded.code !== 200 || !isDegraded) throw new Error(`degraded: ${JSON.stringify(degraded)}`);
    app.kill('SIGTERM');
    const end = await Promise.race([exited, new Promise((r) => setTimeout(() => r(null), 15_000))]);
    if (!end) throw new Error('the app did not end within 15 s of SIGTERM');
    return `migrations ${migrations}; console lists ${consoleGroups.join(',')}; ${EVENTS} handled, pending 0, ready ${up.body.details['redis-streams'].status} → ${details.status}${details.degraded ? ' (degraded: true)' : ''}`;
  } catch (err) {
    err.message += `\napp output:\n${output.slice(-2000)}`;
    throw err;
  } finally {
    if (app.exitCode === null && app.signalCode === null) app.kill('SIGKILL');
    redis.disconnect();
  }
}

/** The groups the app's console (nest-redis-streams/console, at its default path) shows on the stream. */
async function consoleOverview(port, stream) {
  const response = await fetch(`http://127.0.0.1:${port}/streams-console/api/overview`);
  if (response.status !== 200) throw new Error(`console overview answered ${response.status}: ${await response.text()}`);
  const row = (await response.json()).find((r) => r.stream === stream);
  return (row?.groups ?? []).map((g) => g.group);
}

/** A loopback port nobody listens on right now. */
function freePort() {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolvePort(port));
    });
  });
}

/**
 * The README's install line for a fixture (the `npm install …` block after `<!-- install: <fixture> -->`),
 * as arguments, with the packed tarball in place of `nest-redis-streams`: the fixture apps hold only
 * what `nest new` gives an app, so the line is what brings the transport's peers, as for a user.
 */
function readmeInstallArgs(readme, fixture, tarball) {
  const marker = `<!-- install: ${fixture} -->`;
  const at = readme.indexOf(marker);
  if (at < 0) throw new Error(`README.md has no install line marked ${marker}`);
  const line = /```bash\n(npm install [^\n]+)\n```/.exec(readme.slice(at, at + 600))?.[1];
  if (!line) throw new Error(`README.md: no \`npm install …\` block right after ${marker}`);
  const args = line.split(/\s+/).slice(2);
  if (!args.includes('nest-redis-streams'))
    throw new Error(`README.md: the ${fixture} install line does not install nest-redis-streams`);
  return args.map((arg) => (arg === 'nest-redis-streams' ? tarball : arg));
}

function pairs(list) {
  const out = {};
  for (let i = 0; i + 1 < list.length; i += 2) out[list[i]] = list[i + 1];
  return out;
}

async function main() {
  run(process.execPath, ['scripts/build-lib.mjs'], { cwd: root, stdio: 'inherit' });
  const packed = run('npm', ['pack', '--silent', '--pack-destination', work], { cwd: join(root, 'libs/nest-redis-streams') })
    .trim()
    .split('\n')
    .pop();
  const tarball = join(work, packed);
  let redisUrl = process.env.REDIS_URL;
  let ownRedis = null;
  if (!redisUrl) {
    ensureRedisServer();
    ownRedis = await startRedis({ appendonly: false });
    redisUrl = ownRedis.url;
  }
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  try {
    for (const fixture of FIXTURES) {
      const appDir = join(work, fixture);
      cpSync(join(root, 'test/package', fixture), appDir, { recursive: true });
      cpSync(join(root, 'test/package/app/src'), join(appDir, 'src'), { recursive: true });
      const installed = await step(fixture, '-', 'install', () => {
        const args = readmeInstallArgs(readme, fixture, tarball);
        // As a user runs it: versions resolved by the registry now, not from a stale local cache.
        run('npm', ['install', '--no-audit', '--no-fund', ...args], { cwd: appDir });
        const version = (name) => JSON.parse(readFileSync(join(appDir, 'node_modules', name, 'package.json'), 'utf8')).version;
        const peers = ['@nestjs/microservices', '@nestjs/terminus', '@nestjs/schedule', 'ioredis'];
        return `README's line: ${peers.map((name) => `${name} ${version(name)}`).join(', ')}`;
      });
      void installed;
      await step(fixture, '-', 'npx nest-redis-streams', () => {
        const usage = run('npx', ['--no-install', 'nest-redis-streams', '--help'], { cwd: appDir });
        if (!usage.includes('Usage: nest-redis-streams <command>'))
          throw new Error(`unexpected --help output: ${usage.slice(0, 200)}`);
        return 'the installed command prints its usage';
      });
      await step(
        fixture,
        '-',
        'tsc (strict)',
        () => run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json'], { cwd: appDir }) || 'compiled',
      );
      if (fixture === 'nest11-cjs')
        await step(
          fixture,
          '-',
          'tsc (moduleResolution node10)',
          () =>
            run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.node10.json'], { cwd: appDir }) ||
            'the subpaths type-check through typesVersions',
        );
      if (fixture === 'nest11-cjs')
        await step(fixture, '-', 'ts-jest spec', () => {
          const result = spawnSync(process.execPath, ['node_modules/jest/bin/jest.js'], { cwd: appDir, encoding: 'utf8' });
          if (result.status !== 0) throw new Error(`jest failed:\n${result.stderr}`);
          return /Tests:\s+(\d+) passed/.exec(result.stderr)?.[0] ?? 'passed';
        });
      for (const version of NODE_VERSIONS) {
        await step(fixture, version, 'app', () => exercise(appDir, nodeBinary(version), redisUrl, `${fixture}-${version}`));
      }
    }
  } finally {
    await ownRedis?.stop();
    rmSync(work, { recursive: true, force: true });
  }
  console.log('\n| fixture | node | step | result | detail | ms |\n| --- | --- | --- | --- | --- | --- |');
  for (const r of rows)
    console.log(`| ${r.fixture} | ${r.node} | ${r.what} | ${r.result} | ${r.detail.replaceAll('|', '/')} | ${r.ms} |`);
  console.log(`\n${rows.length - failures} passed, ${failures} failed`);
  process.exit(failures === 0 ? 0 : 1);
}

await main();
