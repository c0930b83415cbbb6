#!/usr/bin/env node
// Builds the test matrix's servers (scripts/lib/redis-servers.cjs) into the cache folder, each
// once per version, in parallel, and prints `<name> <path of bin/redis-server>` per server.
//   node scripts/servers/build-servers.mjs            every server
//   node scripts/servers/build-servers.mjs valkey     only the named ones
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const { SERVERS, buildServer, builtBinary, ensureBuildTools, ensureSourceEntry } = require('../lib/redis-servers.cjs');

const args = process.argv.slice(2);
if (args[0] === '--one') {
  // A child of the parallel build: one server, its path on stdout.
  const server = SERVERS.find((s) => s.name === args[1]);
  const bin = buildServer(server, { log: (m) => console.error(m) });
  console.log(bin);
} else {
  const unknown = args.filter((a) => !SERVERS.some((s) => s.name === a));
  if (unknown.length) {
    console.error(`Unknown server ${unknown.join(', ')}: choose from ${SERVERS.map((s) => s.name).join(', ')}.`);
    process.exit(2);
  }
  const wanted = SERVERS.filter((s) => args.length === 0 || args.includes(s.name));
  const missing = wanted.filter((s) => !builtBinary(s));
  // The deb-src entry, apt-get update and the build tools once, before the parallel builds (two
  // apt-get installs at once would fight over dpkg's lock).
  if (missing.length) {
    ensureSourceEntry();
    ensureBuildTools();
  }
  const self = fileURLToPath(import.meta.url);
  const results = await Promise.all(
    wanted.map(
      (server) =>
        new Promise((resolve) => {
          const child = spawn(process.execPath, [self, '--one', server.name], { stdio: ['ignore', 'pipe', 'inherit'] });
          let out = '';
          child.stdout.on('data', (d) => (out += d));
          child.on('exit', (code) => resolve({ server, code, bin: out.trim() }));
        }),
    ),
  );
  for (const { server, code, bin } of results) console.log(code === 0 ? `${server.name} ${bin}` : `${server.name} FAILED`);
  if (results.some((r) => r.code !== 0)) process.exit(1);
}
