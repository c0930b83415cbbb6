import type { Cluster } from 'ioredis';
import { isDeadLetterStream, probeKeyNear } from '../../keys/index.js';
import { type CapabilitySummary, probeCapabilities, summarizeCapabilities } from '../../redis/capabilities.js';
import { type Parsed, stringOption } from '../cli-args.js';
import type { CliContext } from '../cli-context.js';
import { EXIT } from '../cli.constants.js';
import { COMMON_HELP, type Command } from '../command.interface.js';
import { printable } from '../output.js';
import { UsageError } from '../errors/usage.error.js';
import { type Finding, checkAcl, checkHashTags, checkNode, nodesOf } from './doctor-checks.js';
import { ROLE_NEEDS, type Role } from './doctor-roles.js';

/** `doctor`: what the server offers and what an operator set up wrong, with a non-zero exit per problem. */
export const doctorCommand: Command = {
  name: 'doctor',
  summary: 'check the server: eviction, persistence, maxmemory, Lua, ACL, patch floor, hash tags, capabilities',
  help: `Usage: nest-redis-streams doctor [--role consumer|producer|operator] [--stream <key>]

Checks every node (each master of a cluster) for what loses data or breaks the transport:
  eviction      maxmemory-policy must be noeviction (an evicted stream loses its groups)
  persistence   AOF on (RDB only loses the writes since the last snapshot; none loses everything)
  maxmemory     a limit, and not nearly used up
  lua           EVAL works (acks with dead letters, safe trims and ownership are scripts)
  patch-floor   the release carries the fix for stream payloads in RESTORE
                (Redis 7.4.11, 8.2.9, 8.4.6, 8.6.6; Valkey 9.1.2)
  acl           with --role: the connecting user may run what the role needs, on --stream's key
                (asked with redis.acl_check_cmd, nothing is run)
  hash-tags     on a cluster: dead-letter streams share their stream's slot, partitions spread
and lists the newer stream commands each node offers (XREADGROUP CLAIM, XADD IDMP, XACKDEL,
ACKED trimming, XNACK), found by trying them.

  --role <role>   consumer (RedisStreamsServer), producer (RedisStreamsClient) or operator
  --stream <key>  a stream key the role works on, for the ACL check (default: the first stream found)

${COMMON_HELP}

Exit codes: 0 no problem (warnings allowed), 1 a problem found (each is named on stderr),
2 bad arguments, 4 Redis unreachable.
Example: nest-redis-streams doctor --role consumer --stream app:orders --url redis://nrs-consumer:pw@redis:6379`,
  options: {
    role: { type: 'string' },
    stream: { type: 'string' },
  },
  prepare(parsed) {
    const role = stringOption(parsed, 'role');
    if (role !== undefined && !(role in ROLE_NEEDS)) {
      throw new UsageError(`--role must be one of ${Object.keys(ROLE_NEEDS).join(', ')}, got "${role}".`);
    }
    return {};
  },
  async run(ctx, parsed) {
    try {
      return await diagnose(ctx, parsed);
    } catch (err) {
      // A user that may not even read INFO is what doctor is for: an ACL problem (exit 1), not Redis failing (4).
      if (!(err instanceof Error) || !err.message.startsWith('NOPERM')) throw err;
      const message = `The connecting user may not run what doctor reads (${err.message}); every role needs +info (the ACL lines in docs/production.md, "Production kit"): grant it, then run doctor again.`;
      return report(ctx, [{ check: 'acl', level: 'problem', node: '', message }], null);
    }
  },
};

async function diagnose(ctx: CliContext, parsed: Parsed): Promise<number> {
  const redis = ctx.redis as unknown as Cluster;
  const nodes = nodesOf(redis);
  const given = stringOption(parsed, 'stream');
  const caps = await probeCapabilities(redis, given ? probeKeyNear(given) : undefined);
  const findings: Finding[] = [];
  for (const [i, node] of nodes.entries()) {
    const name = `${node.options.host}:${node.options.port}`;
    findings.push(...(await checkNode(node, caps.nodes.find((n) => n.node === name) ?? caps.nodes[i])));
  }
  const role = stringOption(parsed, 'role') as Role | undefined;
  // SCAN only when needed: the consumer and producer roles may not run it.
  const keys = redis.isCluster || (role && !given) ? await streamKeys(nodes) : null;
  if (role) {
    const key = given ?? keys?.streams[0] ?? 'nrs:doctor';
    for (const node of nodes) findings.push(await checkAcl(node, role, key));
  }
  if (redis.isCluster && keys) findings.push(...checkHashTags(keys.streams, keys.deadLetters));
  if (keys?.refused)
    findings.push({ check: 'hash-tags', level: 'warning', node: '', message: `Could not list the streams (${keys.refused}).` });
  return report(ctx, findings, summarizeCapabilities(caps));
}

/** Prints the findings (problems on stderr too); exit 1 when any is a problem. */
function report(ctx: CliContext, findings: Finding[], capabilities: CapabilitySummary | null): number {
  const problems = findings.filter((f) => f.level === 'problem');
  if (ctx.json) ctx.printJson({ capabilities, findings });
  else {
    for (const f of findings)
      ctx.print(`${f.level.padEnd(7)}  ${f.check.padEnd(12)}  ${f.node ? `${f.node}  ` : ''}${printable(f.message, 400)}`);
    ctx.print(problems.length === 0 ? 'No problem found.' : `${problems.length} problem(s) found.`);
  }
  for (const p of problems) ctx.warn(`${p.check}${p.node ? ` (${p.node})` : ''}: ${p.message}`);
  return problems.length > 0 ? EXIT.checkFailed : EXIT.ok;
}

/** Stream keys of every node (SCAN TYPE stream), dead-letter streams apart; `refused` when SCAN is not allowed. */
async function streamKeys(
  nodes: ReturnType<typeof nodesOf>,
): Promise<{ streams: string[]; deadLetters: string[]; refused?: string }> {
  const found = new Set<string>();
  try {
    for (const node of nodes) {
      let cursor = '0';
      do {
        const [next, keys] = await node.scan(cursor, 'COUNT', 500, 'TYPE', 'stream');
        for (const key of keys) found.add(key);
        cursor = next;
      } while (cursor !== '0');
    }
  } catch (err) {
    return { streams: [], deadLetters: [], refused: (err as Error).message };
  }
  const all = [...found].sort();
  return {
    streams: all.filter((k) => !isDeadLetterStream(k)),
    deadLetters: all.filter(isDeadLetterStream),
  };
}
