'use strict';
// A local Redis Cluster for tests and benchmarks: N masters with R replicas each, on loopback
// ports, created with `redis-cli --cluster create`. Each node is a RedisProcess, so a test can
// SIGKILL a master and watch its replica take over.
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { RedisProcess, ensureRedisServer, redisCliBinary, startOnFreePort } = require('./redis-process.cjs');

function cli(port, ...args) {
  const res = spawnSync(redisCliBinary(), ['-p', String(port), ...args], { encoding: 'utf8' });
  return (res.stdout || '') + (res.stderr || '');
}

async function waitFor(check, what, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}.`);
}

class RedisCluster {
  constructor(nodes) {
    this.nodes = nodes;
  }

  /** Seed nodes for ioredis' Cluster constructor. */
  get startupNodes() {
    return this.nodes.map((n) => ({ host: '127.0.0.1', port: n.port }));
  }

  /** Nodes currently serving as masters (asks each live node for its role). */
  masters() {
    return this.nodes.filter((n) => n.child && /role:master/.test(cli(n.port, 'INFO', 'replication')));
  }

  /** Kills a master with SIGKILL and waits until the cluster is whole again (a replica took over). */
  async killMaster(node) {
    await node.kill('SIGKILL');
    const alive = this.nodes.find((n) => n !== node && n.child);
    await waitFor(
      () => /cluster_state:ok/.test(cli(alive.port, 'CLUSTER', 'INFO')) && this.masters().length === this.masterCount,
      'a replica to be promoted',
    );
  }

  /**
   * SIGKILLs every node at once. A SIGTERMed master waits up to shutdown-timeout (10 s) for a
   * lagging replica to catch up; one node after another that added up to over a minute on a
   * loaded CI machine. The cluster's data is thrown away, so nothing is lost by not waiting.
   */
  async stop() {
    await Promise.all(
      this.nodes.map(async (node) => {
        await node.kill('SIGKILL');
        fs.rmSync(node.dir, { recursive: true, force: true });
      }),
    );
  }
}

/** Starts masters × (1 + replicas) cluster-enabled redis-servers and joins them into a cluster. */
async function startCluster({ masters = 3, replicas = 1, appendfsync = 'always' } = {}) {
  ensureRedisServer();
  const nodes = [];
  for (let i = 0; i < masters * (1 + replicas); i++) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nrs-cluster-'));
    const node = await startOnFreePort(
      (port) =>
        new RedisProcess({
          port,
          dir,
          appendonly: true,
          appendfsync,
          extraArgs: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '1000'],
        }),
    );
    nodes.push(node);
  }
  const created = spawnSync(
    redisCliBinary(),
    ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', String(replicas), '--cluster-yes'],
    { encoding: 'utf8' },
  );
  if (created.status !== 0) throw new Error(`redis-cli --cluster create failed: ${created.stdout}${created.stderr}`);
  const cluster = new RedisCluster(nodes);
  cluster.masterCount = masters;
  await waitFor(
    () => nodes.every((n) => /cluster_state:ok/.test(cli(n.port, 'CLUSTER', 'INFO'))),
    'cluster_state:ok on every node',
  );
  // Replicas attach asynchronously; failover needs them in sync.
  await waitFor(
    () =>
      nodes.filter((n) => /role:slave[\s\S]*master_link_status:up/.test(cli(n.port, 'INFO', 'replication'))).length ===
      masters * replicas,
    'every replica to be linked to its master',
  );
  return cluster;
}

module.exports = { startCluster, RedisCluster };
