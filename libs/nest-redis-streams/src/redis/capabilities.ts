import type { Cluster, Redis } from 'ioredis';
import { CAPABILITY_PROBE_NAME, DEFAULT_PROBE_KEY, probeKeyCandidate, slotOf } from '../keys/index.js';

/** A yes/no of one capability, and how it was found. */
export type Detection = 'probe' | 'command-docs' | 'refused';

/** What one Redis (or Valkey) node offers for streams, found by trying each argument on it. */
export interface NodeCapabilities {
  /** `host:port` of the node ('' for a standalone connection that does not say). */
  node: string;
  /** `redis` or `valkey` (`server_name` of INFO server; Redis does not send one before 8). */
  server: 'redis' | 'valkey';
  /** The server's own version: `valkey_version` on Valkey (its `redis_version` is a compatibility 7.2.4). */
  version: string;
  /** XREADGROUP … CLAIM <min-idle>: one read takes over idle pending entries and new ones (Redis 8.4). */
  claim: boolean;
  /** XADD … IDMP <producer> <iid> with XCFGSET: the stream itself drops a re-sent event (Redis 8.6). */
  idmp: boolean;
  /** XACKDEL and XDELEX: ack and delete in one command, honouring other groups' references (Redis 8.2). */
  ackDelete: boolean;
  /** KEEPREF | DELREF | ACKED on XADD/XTRIM trimming (Redis 8.2). */
  trimConditions: boolean;
  /** XNACK: hand an entry back to the group without waiting for min-idle. */
  nack: boolean;
  /** How each capability was decided: 'refused' means the probe was not allowed (ACL) and it counts as absent. */
  detectedBy: Record<CapabilityName, Detection>;
  /** Whether this node is below its release line's patch floor (see `patchFloorOf`). */
  patchFloor: PatchFloorVerdict;
}

/** The stream capabilities a node can have. */
export type CapabilityName = 'claim' | 'idmp' | 'ackDelete' | 'trimConditions' | 'nack';

export const CAPABILITY_NAMES: readonly CapabilityName[] = ['claim', 'idmp', 'ackDelete', 'trimConditions', 'nack'];

/** How each capability is shown in logs and in `doctor`. */
export const CAPABILITY_LABELS: Record<CapabilityName, string> = {
  claim: 'XREADGROUP CLAIM',
  idmp: 'XADD IDMP',
  ackDelete: 'XACKDEL/XDELEX',
  trimConditions: 'trim KEEPREF/DELREF/ACKED',
  nack: 'XNACK',
};

/** What every node of a deployment offers: a capability counts only when all nodes have it. */
export interface ServerCapabilities {
  nodes: NodeCapabilities[];
  /** A capability the transport may use: every node has it (a rolling upgrade mixes versions). */
  all: Record<CapabilityName, boolean>;
}

/** The verdict on a node's version against the patch floor of its line. */
export interface PatchFloorVerdict {
  /** True when the node is at or above its line's first fixed release (or its line is newer). */
  ok: boolean;
  /** The release to upgrade to; null when ok or the version could not be read. */
  floor: string | null;
}

/**
 * First releases of each line with the fix for stream payloads restored with RESTORE (also
 * reached through replication and cluster slot migration). Lines not listed and older than the
 * newest listed one have no fixed release: upgrade to the next listed line.
 */
export const PATCH_FLOORS: Readonly<Record<'redis' | 'valkey', readonly string[]>> = {
  redis: ['7.4.11', '8.2.9', '8.4.6', '8.6.6'],
  valkey: ['9.1.2'],
};

type Version = [number, number, number];

function parseVersion(version: string): Version | null {
  const match = /^(\d+)\.(\d+)(?:\.(\d+))?/.exec(version.trim());
  return match ? [Number(match[1]), Number(match[2]), Number(match[3] ?? 0)] : null;
}

function compare(a: Version, b: Version): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

/**
 * Whether `version` of `server` carries the RESTORE fix: at or above its own line's floor, or on a
 * line newer than every listed one. A line older than the newest listed one without a floor of its
 * own (Redis 7.0, 7.2, 8.0) has none, and the floor named is that of the next listed line.
 */
export function patchFloorOf(server: 'redis' | 'valkey', version: string): PatchFloorVerdict {
  const parsed = parseVersion(version);
  if (!parsed) return { ok: true, floor: null };
  const floors = PATCH_FLOORS[server].map((f) => [f, parseVersion(f)!] as const);
  const sameLine = floors.find(([, f]) => f[0] === parsed[0] && f[1] === parsed[1]);
  if (sameLine) return compare(parsed, sameLine[1]) >= 0 ? { ok: true, floor: null } : { ok: false, floor: sameLine[0] };
  const next = floors.find(([, f]) => compare(f, parsed) > 0);
  return next ? { ok: false, floor: next[0] } : { ok: true, floor: null };
}

/** Messages of the capability report: full sentences naming the node, the version and the fix. */
export const CAPABILITY_MESSAGES = {
  report: (caps: ServerCapabilities) => {
    const nodes = caps.nodes.map((n) => {
      const has = CAPABILITY_NAMES.filter((c) => n[c]).map((c) => CAPABILITY_LABELS[c]);
      const refused = CAPABILITY_NAMES.filter((c) => n.detectedBy[c] === 'refused').map((c) => CAPABILITY_LABELS[c]);
      return (
        `${n.server} ${n.version || '(version unknown)'}${n.node ? ` at ${n.node}` : ''}: ` +
        (has.length > 0 ? has.join(', ') : 'none of the newer stream commands') +
        (refused.length > 0 ? ` (not allowed to probe ${refused.join(', ')}: counted as absent)` : '')
      );
    });
    return `Stream capabilities: ${nodes.join('; ')}. Absent ones fall back to the 7.0 commands.`;
  },
  belowPatchFloor: (node: NodeCapabilities) =>
    `${node.server === 'valkey' ? 'Valkey' : 'Redis'} ${node.version}${node.node ? ` at ${node.node}` : ''} is below ` +
    `${node.patchFloor.floor}, the first release of its line with the fix for stream payloads in RESTORE. ` +
    `Upgrade to ${node.patchFloor.floor} or a later release.`,
} as const;

const PROBE_GROUP = CAPABILITY_PROBE_NAME;

/**
 * Probes every node once: on a Cluster each master (a rolling upgrade can mix versions), on a
 * single connection the server behind it. Nothing is written: the probes run against a key that
 * does not exist, with NOMKSTREAM, and Redis parses every argument before it looks at the key.
 * Pass a `keyBase` inside the key patterns of a restricted ACL user (`<stream>:nrs-capability-probe`),
 * or its probes are refused and only COMMAND DOCS (often refused too) can tell.
 */
export async function probeCapabilities(redis: Redis | Cluster, keyBase = DEFAULT_PROBE_KEY): Promise<ServerCapabilities> {
  const nodes = isCluster(redis)
    ? await Promise.all(redis.nodes('master').map((node) => probeNode(node, probeKeyFor(redis, node, keyBase))))
    : [await probeNode(redis, keyBase)];
  return { nodes, all: combine(nodes) };
}

/** The capabilities every node has. */
export function combine(nodes: readonly NodeCapabilities[]): Record<CapabilityName, boolean> {
  const all = {} as Record<CapabilityName, boolean>;
  for (const name of CAPABILITY_NAMES) all[name] = nodes.length > 0 && nodes.every((n) => n[name]);
  return all;
}

function isCluster(redis: Redis | Cluster): redis is Cluster {
  return (redis as Cluster).isCluster === true;
}

/** A key whose slot the node serves, so that the probe is not answered with MOVED. */
function probeKeyFor(cluster: Cluster, node: Redis, keyBase: string): string {
  const address = `${node.options.host}:${node.options.port}`;
  const slots = cluster.slots;
  for (let i = 0; i < 100_000; i++) {
    const key = probeKeyCandidate(keyBase, i);
    if (slots[slotOf(key)]?.[0] === address) return key;
  }
  return keyBase;
}

/** One reply of a probe: what it answered, or the error it failed with. */
type Answer = { ok: true; value: unknown } | { ok: false; message: string };

async function ask(redis: Redis, args: [string, ...Array<string | number>]): Promise<Answer> {
  try {
    return { ok: true, value: await redis.call(...args) };
  } catch (err) {
    return { ok: false, message: err instanceof Error ? err.message : String(err) };
  }
}

function refused(answer: Answer): boolean {
  return !answer.ok && /^(NOPERM|ERR unknown command|ERR .*not allowed)/i.test(answer.message);
}

/** Probes one node; exported for `doctor`, which reports per node. */
export async function probeNode(redis: Redis, key: string): Promise<NodeCapabilities> {
  const info = String(await redis.info('server'));
  const field = (name: string) => new RegExp(`^${name}:(.+)$`, 'm').exec(info)?.[1]?.trim() ?? '';
  const server = field('server_name') === 'valkey' ? 'valkey' : 'redis';
  const version = server === 'valkey' ? field('valkey_version') || field('redis_version') : field('redis_version');
  const [claim, idmp, trim, commands] = await Promise.all([
    ask(redis, ['XREADGROUP', 'GROUP', PROBE_GROUP, PROBE_GROUP, 'CLAIM', 0, 'COUNT', 1, 'STREAMS', key, '>']),
    ask(redis, ['XADD', key, 'NOMKSTREAM', 'IDMP', PROBE_GROUP, 'probe', '*', 'f', 'v']),
    ask(redis, ['XTRIM', key, 'MAXLEN', 0, 'ACKED']),
    ask(redis, ['COMMAND', 'INFO', 'XCFGSET', 'XACKDEL', 'XDELEX', 'XNACK']),
  ]);
  for (const answer of [claim, idmp, trim]) {
    // A probe key on another node's slot would read as "absent": a bug of probeKeyFor, never a verdict.
    if (!answer.ok && /^(MOVED|ASK) /.test(answer.message))
      throw new Error(`Capability probe key "${key}" is not served by this node (${answer.message}).`);
  }
  const docs = new DocsLookup(redis);
  const detectedBy = {} as Record<CapabilityName, Detection>;
  // XREADGROUP with CLAIM on a missing key: NOGROUP once CLAIM was parsed, a syntax error before 8.4.
  const claimOk = await decide(
    claim,
    (a) => !a.ok && a.message.startsWith('NOGROUP'),
    () => docs.has('XREADGROUP', 'claim'),
  );
  // XADD NOMKSTREAM on a missing key answers nil; older servers take IDMP for the entry id.
  const idmpOk = await decide(
    idmp,
    (a) => a.ok && a.value === null,
    () => docs.has('XADD', 'idmp'),
  );
  const trimOk = await decide(
    trim,
    (a) => a.ok,
    () => docs.has('XTRIM', 'acked'),
  );
  const present = commands.ok && Array.isArray(commands.value) ? commands.value.map((c) => Array.isArray(c)) : null;
  const nodeCaps: NodeCapabilities = {
    node: redis.options?.host ? `${redis.options.host}:${redis.options.port}` : '',
    server,
    version,
    claim: claimOk.value,
    // IDMP without XCFGSET cannot be sized for a relay's restart, and the two arrived together.
    idmp: idmpOk.value && (present ? present[0] : true),
    ackDelete: present ? present[1] && present[2] : false,
    trimConditions: trimOk.value,
    nack: present ? present[3] : false,
    detectedBy,
    patchFloor: patchFloorOf(server, version),
  };
  detectedBy.claim = claimOk.by;
  detectedBy.idmp = idmpOk.by;
  detectedBy.trimConditions = trimOk.by;
  detectedBy.ackDelete = detectedBy.nack = present ? 'probe' : 'refused';
  return nodeCaps;
}

/**
 * A probe's answer decides; one that was refused (ACL NOPERM on the probe key, a proxy that does
 * not pass the command) falls back to the argument list of COMMAND DOCS, and to absent.
 */
async function decide(
  answer: Answer,
  yes: (a: Answer) => boolean,
  fallback: () => Promise<boolean | null>,
): Promise<{ value: boolean; by: Detection }> {
  if (!refused(answer)) return { value: yes(answer), by: 'probe' };
  const documented = await fallback();
  return documented === null ? { value: false, by: 'refused' } : { value: documented, by: 'command-docs' };
}

/** Argument tokens of commands as COMMAND DOCS lists them (nested blocks included). */
class DocsLookup {
  private readonly cache = new Map<string, Promise<Set<string> | null>>();

  constructor(private readonly redis: Redis) {}

  /** Whether `command` documents the argument `token`; null when COMMAND DOCS is not allowed. */
  async has(command: string, token: string): Promise<boolean | null> {
    let tokens = this.cache.get(command);
    if (!tokens) this.cache.set(command, (tokens = this.read(command)));
    const found = await tokens;
    return found ? found.has(token) : null;
  }

  private async read(command: string): Promise<Set<string> | null> {
    const answer = await ask(this.redis, ['COMMAND', 'DOCS', command]);
    if (!answer.ok || !Array.isArray(answer.value)) return null;
    const tokens = new Set<string>();
    collectTokens(answer.value, tokens);
    return tokens;
  }
}

/** Walks a COMMAND DOCS reply (flat key/value lists in RESP2) and keeps every argument name and token. */
export function collectTokens(reply: unknown, into: Set<string>): void {
  if (!Array.isArray(reply)) return;
  for (let i = 0; i < reply.length; i++) {
    const item: unknown = reply[i];
    if ((item === 'name' || item === 'token') && typeof reply[i + 1] === 'string') {
      into.add((reply[i + 1] as string).toLowerCase());
    } else if (Array.isArray(item)) collectTokens(item, into);
  }
}

/** Where the report goes: a Nest Logger fits. */
export interface CapabilityLog {
  log(message: string): void;
  warn(message: string): void;
}

/** Nodes already warned about in this process: a pod that listens again is not told twice. */
const warnedBelowFloor = new Set<string>();

/**
 * Probes, logs one line with what every node offers, and warns once per node and version when a
 * node is below its patch floor. A probe that fails (the connection, an unexpected reply) is
 * logged and counts as no capability: the transport then runs on the 7.0 commands.
 */
export async function reportCapabilities(
  redis: Redis | Cluster,
  log: CapabilityLog,
  keyBase = DEFAULT_PROBE_KEY,
): Promise<ServerCapabilities> {
  let caps: ServerCapabilities;
  try {
    caps = await probeCapabilities(redis, keyBase);
  } catch (err) {
    log.warn(`Could not probe the server's stream capabilities (${(err as Error).message}); using the 7.0 commands only.`);
    return { nodes: [], all: combine([]) };
  }
  log.log(CAPABILITY_MESSAGES.report(caps));
  for (const node of caps.nodes) {
    const key = `${node.node}@${node.server}-${node.version}`;
    if (node.patchFloor.ok || warnedBelowFloor.has(key)) continue;
    warnedBelowFloor.add(key);
    log.warn(CAPABILITY_MESSAGES.belowPatchFloor(node));
  }
  return caps;
}

/** Readiness details / overview form: what every node has, and the nodes by version and patch floor. */
export interface CapabilitySummary extends Record<CapabilityName, boolean> {
  nodes: Array<{ node: string; server: string; version: string; upgradeTo: string | null }>;
}

/** The summary of a probe (for readiness details, the console and `doctor --json`). */
export function summarizeCapabilities(caps: ServerCapabilities): CapabilitySummary {
  return {
    ...caps.all,
    nodes: caps.nodes.map((n) => ({ node: n.node, server: n.server, version: n.version, upgradeTo: n.patchFloor.floor })),
  };
}
