import { checkPartitions } from '../../operations/stream-position.js';
import { formatDuration } from '../../health/stats-table.js';
import { OperationError } from '../../operations/errors/operation.error.js';
import type { GroupOwnership } from '../../operations/ownership.js';
import { intOption, positionals } from '../cli-args.js';
import { EXIT } from '../cli.constants.js';
import { COMMON_HELP, type Command } from '../command.interface.js';
import { printable } from '../output.js';
import { formatTable } from '../table.js';

const lease = (ms: number | null) => (ms === null ? '-' : ms > 0 ? formatDuration(ms) : 'expired');

function formatOwnership(o: GroupOwnership): string {
  const head = `${printable(o.stream)} / ${printable(o.group)}: ${o.members.length} members, ${o.partitions.length} partitions, ${o.claims} claims so far (sum of generations)`;
  const members = formatTable(
    ['member', 'lease left', 'owns'],
    o.members.map((m) => [printable(m.member, 60), lease(m.leaseLeftMs), m.owns.join(' ') || '-']),
    new Set([1]),
  );
  const partitions = formatTable(
    ['partition', 'stream', 'owner', 'generation', 'lease left'],
    o.partitions.map((p) => [
      String(p.partition),
      printable(p.stream, 60),
      p.owner === null ? '(free)' : printable(p.owner, 60),
      String(p.generation),
      lease(p.leaseLeftMs),
    ]),
    new Set([0, 3, 4]),
  );
  const free = o.unowned.length > 0 ? [`! partitions no live member owns: ${o.unowned.join(' ')}`] : [];
  return [head, '', members, '', partitions, ...free].join('\n');
}

/** `ownership`: who owns which partition of a group under `ownership: 'exclusive'`, read from Redis. */
export const ownershipCommand: Command = {
  name: 'ownership',
  summary: "exclusive ownership: a group's members and who owns which partition, generation, lease",
  help: `Usage: nest-redis-streams ownership <stream> <group> [--partitions N] [--max-unowned N]

Reads the ownership keys that instances with ownership: 'exclusive' keep in Redis (it writes
nothing): the members with their lease, and per partition its owner, generation (fencing token:
one more on every claim, so it counts hand-overs and takeovers) and the time left on its lease.
<stream> is the logical stream (orders) or one of its partition streams (orders:{orders:3}).
  --partitions <n>    how many partitions the handler has (default: probe up to the first missing)
  --max-unowned <n>   exit 1 when more partitions than this have no live owner (e.g. 0 in a check)

${COMMON_HELP}

Exit codes: 0 ok, 1 over --max-unowned, 2 bad arguments, 3 the group has no ownership keys.
Example: nest-redis-streams ownership orders billing --max-unowned 0`,
  options: {
    partitions: { type: 'string' },
    'max-unowned': { type: 'string' },
  },
  prepare(parsed) {
    const [stream] = positionals('ownership', parsed, ['stream', 'group']);
    checkPartitions(intOption(parsed, 'partitions', 1));
    intOption(parsed, 'max-unowned');
    return { streams: [stream] };
  },
  async run(ctx, parsed) {
    const [stream, group] = parsed.positionals;
    const ownership = await ctx.ops.ownership(stream, group, intOption(parsed, 'partitions', 1));
    if (!ownership) {
      throw new OperationError(
        'not-found',
        `Group "${group}" of stream "${stream}" has no ownership keys: its handlers consume shared (no ownership: 'exclusive'), or none has started yet.`,
      );
    }
    if (ctx.json) ctx.printJson(ownership);
    else ctx.print(formatOwnership(ownership));
    const limit = intOption(parsed, 'max-unowned');
    if (limit !== undefined && ownership.unowned.length > limit) {
      ctx.warn(
        `Stream "${printable(ownership.stream)}" group "${printable(group)}": ${ownership.unowned.length} partitions have no live owner (${ownership.unowned.join(' ')}), above --max-unowned ${limit}.`,
      );
      return EXIT.checkFailed;
    }
    return EXIT.ok;
  },
};
