import type { Cluster, Redis } from 'ioredis';
import { CAPABILITY_MESSAGES, type NodeCapabilities, combine } from '../../redis/capabilities.js';
import { deadLetterSourceStream, slotOf } from '../../keys/index.js';
import { ROLE_NEEDS, type Role, grantOf } from './doctor-roles.js';

/** One finding of `doctor`: a problem makes it exit non-zero. */
export interface Finding {
  check: 'eviction' | 'persistence' | 'maxmemory' | 'lua' | 'acl' | 'patch-floor' | 'hash-tags' | 'capabilities';
  level: 'ok' | 'warning' | 'problem';
  /** `host:port` of the node it is about; '' for the deployment as a whole. */
  node: string;
  message: string;
}

// Asks Redis whether the user running it may run each command line, without running any:
// redis.acl_check_cmd (7.0+) applies the user's command and key rules to the arguments.
// ARGV: for each line its word count, then its words → indexes (1-based) of refused lines, or -1
// when this server's Lua has no acl_check_cmd.
const ACL_CHECK = `
if redis.acl_check_cmd == nil then return -1 end
local refused, i, n = {}, 1, 0
while i <= #ARGV do
  local count = tonumber(ARGV[i])
  local args = {}
  for j = 1, count do args[j] = ARGV[i + j] end
  n = n + 1
  local ok, allowed = pcall(redis.acl_check_cmd, unpack(args))
  if not ok or not allowed then refused[#refused + 1] = n end
  i = i + count + 1
end
return refused`;

/** Shorter IDMP windows than this do not cover a producer's restart. */
const IDMP_MIN_SECONDS = 300;

const PERSISTENCE_HINT = 'Enable AOF (appendonly yes) so that a restart keeps streams, groups and pending entries.';

function nodeName(node: Redis): string {
  return `${node.options.host}:${node.options.port}`;
}

function infoField(info: string, name: string): string {
  return new RegExp(`^${name}:(.*)$`, 'm').exec(info)?.[1]?.trim() ?? '';
}

async function configGet(node: Redis, name: string): Promise<string | null> {
  try {
    const reply = (await node.config('GET', name)) as string[];
    return reply.length >= 2 ? reply[1] : null;
  } catch {
    return null;
  }
}

/** Eviction, persistence, maxmemory, Lua, patch floor and capabilities (probed before) of one node. */
export async function checkNode(node: Redis, caps: NodeCapabilities): Promise<Finding[]> {
  const name = nodeName(node);
  const findings: Finding[] = [];
  const add = (check: Finding['check'], level: Finding['level'], message: string) =>
    findings.push({ check, level, node: name, message });
  const info = String(await node.info());

  // INFO memory says the policy to everyone; CONFIG is often refused on managed services.
  const policy = infoField(info, 'maxmemory_policy') || (await configGet(node, 'maxmemory-policy')) || '';
  if (policy === 'noeviction') add('eviction', 'ok', 'maxmemory-policy is noeviction: nothing is evicted.');
  else if (policy.startsWith('allkeys-'))
    add(
      'eviction',
      'problem',
      `maxmemory-policy is ${policy}: under memory pressure Redis may evict a whole stream, and its consumer groups and ` +
        'pending entries with it (entries are lost without a trace). Set maxmemory-policy noeviction.',
    );
  else if (policy.startsWith('volatile-'))
    add(
      'eviction',
      'warning',
      `maxmemory-policy is ${policy}: keys with a TTL (idempotency records, ownership leases) may be evicted early, ` +
        'which lets an event run twice. Prefer noeviction.',
    );
  else add('eviction', 'warning', 'Could not read maxmemory-policy (INFO and CONFIG GET did not say); check it is noeviction.');

  const aof = infoField(info, 'aof_enabled') === '1';
  const save = await configGet(node, 'save');
  if (aof) add('persistence', 'ok', 'AOF is on.');
  else if (save === null)
    add('persistence', 'warning', `AOF is off and the RDB schedule could not be read (CONFIG GET refused). ${PERSISTENCE_HINT}`);
  else if (save.trim() === '')
    add(
      'persistence',
      'problem',
      `No persistence (AOF off, no RDB save schedule): a restart of this node loses every stream, group and pending entry. ${PERSISTENCE_HINT}`,
    );
  else
    add(
      'persistence',
      'warning',
      `Only RDB snapshots (save "${save}"): a crash loses what was written since the last snapshot, acks included, ` +
        `so handled entries are delivered again and new ones are lost. ${PERSISTENCE_HINT}`,
    );

  const maxmemory = Number(infoField(info, 'maxmemory') || (await configGet(node, 'maxmemory')) || 0);
  const used = Number(infoField(info, 'used_memory') || 0);
  if (maxmemory === 0)
    add(
      'maxmemory',
      'warning',
      'maxmemory is 0 (no limit): a growing backlog ends with the kernel killing Redis. Set maxmemory below the ' +
        "machine's memory, with noeviction, so that writes fail (and are retried) instead.",
    );
  else if (used > 0.9 * maxmemory)
    add(
      'maxmemory',
      'problem',
      `used_memory ${used} is above 90% of maxmemory ${maxmemory}: with noeviction writes are refused soon. ` +
        'Trim the streams (nest-redis-streams trim --safe) or raise maxmemory.',
    );
  else add('maxmemory', 'ok', `maxmemory ${maxmemory}, ${Math.round((100 * used) / maxmemory)}% used.`);

  try {
    const answer = await node.eval('return 1', 0);
    if (answer === 1) add('lua', 'ok', 'Lua scripting answers (EVAL).');
    else
      add('lua', 'problem', `EVAL "return 1" answered ${JSON.stringify(answer)}: the Lua engine does not work as Redis' does.`);
  } catch (err) {
    add(
      'lua',
      'problem',
      `EVAL failed (${(err as Error).message}): the transport's atomic steps (acks with dead letters, safe trims, ` +
        'ownership) are Lua scripts. Enable scripting (Lua engine loaded, EVAL/EVALSHA allowed).',
    );
  }

  if (caps.patchFloor.ok) add('patch-floor', 'ok', `${caps.server} ${caps.version} carries the RESTORE fix of its line.`);
  else add('patch-floor', 'problem', CAPABILITY_MESSAGES.belowPatchFloor(caps));
  if (caps.idmp) {
    // New streams get the server's IDMP window; setting one per stream later empties it.
    const duration = await configGet(node, 'stream-idmp-duration');
    if (duration !== null && Number(duration) < IDMP_MIN_SECONDS)
      add(
        'capabilities',
        'warning',
        `stream-idmp-duration is ${duration} s: an outbox relay or producer that retries later than that writes a second ` +
          `entry (the consumers' inbox still absorbs it). Set it to cover a restart, e.g. CONFIG SET stream-idmp-duration 600.`,
      );
  }
  add(
    'capabilities',
    'ok',
    CAPABILITY_MESSAGES.report({ nodes: [caps], all: combine([caps]) }).replace(/^Stream capabilities: /, ''),
  );
  return findings;
}

/** Whether the connecting user may run everything `role` needs, on `key` (checked on `node`, without running it). */
export async function checkAcl(node: Redis, role: Role, key: string): Promise<Finding> {
  const lines = ROLE_NEEDS[role].map((l) => l.replace('$K', key));
  const argv = lines.flatMap((l) => {
    const words = l.split(' ');
    return [String(words.length), ...words];
  });
  const finding = (level: Finding['level'], message: string): Finding => ({ check: 'acl', level, node: nodeName(node), message });
  let refused: unknown;
  try {
    refused = await node.eval(ACL_CHECK, 0, ...argv);
  } catch (err) {
    return finding(
      'problem',
      `Could not check the ACL: EVAL was refused (${(err as Error).message}). Role ${role} needs EVAL and EVALSHA: ` +
        'grant them with `ACL SETUSER <user> +eval +evalsha`.',
    );
  }
  if (refused === -1) return finding('warning', 'This server has no redis.acl_check_cmd (Redis 7.0+): the ACL was not checked.');
  const missing = [...new Set((refused as number[]).map((i) => grantOf(ROLE_NEEDS[role][i - 1])))];
  if (missing.length === 0) return finding('ok', `The user may run everything role ${role} needs on "${key}".`);
  return finding(
    'problem',
    `The user may not run ${missing.map((g) => g.toUpperCase().replace('|', ' ')).join(', ')} on "${key}", which role ${role} needs. ` +
      `Grant them with \`ACL SETUSER <user> ${missing.map((g) => `+${g}`).join(' ')}\` (and a key pattern covering "${key}"; ` +
      'docs/production.md, "Production kit", lists each role).',
  );
}

/**
 * On a cluster: a dead-letter stream must share its stream's slot (the dead-letter script writes
 * both atomically), and the partitions of one logical stream should spread over slots.
 */
export function checkHashTags(streams: readonly string[], deadLetterStreams: readonly string[]): Finding[] {
  const findings: Finding[] = [];
  for (const dlq of deadLetterStreams) {
    const stream = deadLetterSourceStream(dlq);
    if (streams.includes(stream) && slotOf(stream) !== slotOf(dlq))
      findings.push({
        check: 'hash-tags',
        level: 'problem',
        node: '',
        message:
          `Dead-letter stream "${dlq}" hashes to slot ${slotOf(dlq)}, its stream "${stream}" to ${slotOf(stream)}: ` +
          `dead-lettering fails with CROSSSLOT. Use "{${stream}}:dlq" or put a {hash tag} in both names.`,
      });
  }
  const byLogical = new Map<string, string[]>();
  for (const stream of streams) {
    const match = /^(.*):\{[^{}]*:(\d+)\}$/.exec(stream);
    if (match) byLogical.set(match[1], [...(byLogical.get(match[1]) ?? []), stream]);
  }
  for (const [logical, partitions] of byLogical) {
    const slots = new Set(partitions.map(slotOf));
    if (partitions.length > 1 && slots.size === 1)
      findings.push({
        check: 'hash-tags',
        level: 'warning',
        node: '',
        message:
          `All ${partitions.length} partitions of "${logical}" hash to slot ${[...slots][0]}: one shard takes all their load. ` +
          'A {hash tag} in the stream name pins every partition to it; leave the tag out of partitioned stream names.',
      });
  }
  if (findings.length === 0)
    findings.push({
      check: 'hash-tags',
      level: 'ok',
      node: '',
      message: "Dead-letter streams share their stream's slot; partitions spread.",
    });
  return findings;
}

/** The masters of a cluster, or the single node. */
export function nodesOf(redis: Redis | Cluster): Redis[] {
  return (redis as Cluster).isCluster ? (redis as Cluster).nodes('master') : [redis as Redis];
}
