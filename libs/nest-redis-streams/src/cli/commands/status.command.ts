import { formatStatsTable } from '../../health/stats-table.js';
import type { GroupOverview } from '../../operations/overview.js';
import { partitionOfKey } from '../../keys/index.js';
import { intOption } from '../cli-args.js';
import { EXIT } from '../cli.constants.js';
import { COMMON_HELP, type Command } from '../command.interface.js';
import { escapeControls, printable } from '../output.js';

type Gate = { option: string; figure: (g: GroupOverview) => number | null; what: string };

const GATES: Gate[] = [
  { option: 'max-lag', figure: (g) => g.lag, what: 'lag (undelivered entries)' },
  { option: 'max-pending', figure: (g) => g.pending, what: 'pending entries' },
  { option: 'max-idle', figure: (g) => g.oldestIdleMs, what: 'oldest pending idle (ms)' },
  { option: 'max-dead-letters', figure: (g) => g.groupDeadLetters ?? g.deadLetters, what: 'dead letters' },
];

/** `status`: the figures table of every stream and group, with limits for cron jobs and CI gates. */
export const statusCommand: Command = {
  name: 'status',
  summary: 'pending, oldest idle, lag, dead letters and consumers of every stream and group',
  help: `Usage: nest-redis-streams status [--stream <key>]... [--max-lag N] [--max-pending N] [--max-idle MS] [--max-dead-letters N]

Prints one row per stream and group. Without --stream, every stream with consumer groups is
found with SCAN. Groups under ownership: 'exclusive' get a line saying how many partitions each
instance owns (the "ownership" command shows generations and leases). With a limit, exits 1 when a group is over it and names the group on stderr.

Limits:
  --max-lag <n>           entries not yet delivered to a group
  --max-pending <n>       entries delivered and not acknowledged
  --max-idle <ms>         idle time of the oldest pending entry
  --max-dead-letters <n>  the group's own records in the dead-letter stream
  --stream <key>          only this stream (repeatable)

${COMMON_HELP}

Exit codes: 0 within limits, 1 a limit exceeded, 2 bad arguments, 3 a --stream without groups
(or missing), 4 Redis unreachable.
Example: nest-redis-streams status --max-lag 10000 --url redis://redis:6379`,
  options: {
    stream: { type: 'string', multiple: true },
    'max-lag': { type: 'string' },
    'max-pending': { type: 'string' },
    'max-idle': { type: 'string' },
    'max-dead-letters': { type: 'string' },
  },
  prepare(parsed) {
    for (const gate of GATES) intOption(parsed, gate.option);
    const streams = parsed.values.stream as string[] | undefined;
    return streams ? { streams } : {};
  },
  async run(ctx, parsed) {
    const overview = await ctx.ops.overview();
    const groups = overview.flatMap((s) => s.groups);
    const breaches: string[] = [];
    for (const gate of GATES) {
      const limit = intOption(parsed, gate.option);
      if (limit === undefined) continue;
      for (const g of groups) {
        const figure = gate.figure(g);
        const where = `Stream "${escapeControls(g.stream)}" group "${escapeControls(g.group)}"`;
        if (g.error) breaches.push(`${where}: ${escapeControls(g.error)}`);
        else if (figure !== null && figure > limit)
          breaches.push(`${where}: ${gate.what} is ${figure}, above --${gate.option} ${limit}.`);
      }
    }
    if (ctx.json) ctx.printJson({ streams: overview, breaches });
    else {
      // The stats table is the health module's (it pads raw names): it gets them escaped.
      ctx.print(
        formatStatsTable(groups.map((g) => ({ ...g, stream: escapeControls(g.stream), group: escapeControls(g.group) }))),
      );
      const flagged = groups.filter((g) => g.badges.length > 0 || g.error);
      for (const g of flagged)
        ctx.print(
          `! ${escapeControls(g.stream)} / ${escapeControls(g.group)}: ${escapeControls(g.error ?? g.badges.join(', '))}`,
        );
      for (const line of ownershipLines(groups)) ctx.print(line);
    }
    for (const breach of [...new Set(breaches)]) ctx.warn(breach);
    if (breaches.length > 0) return EXIT.checkFailed;
    // A gate on a named stream must not pass because the stream is gone (renamed, flushed).
    const named = (parsed.values.stream as string[] | undefined) ?? [];
    const empty = overview.filter((s) => named.includes(s.stream) && s.groups.length === 0);
    for (const s of empty)
      ctx.warn(`Stream "${escapeControls(s.stream)}" does not exist or has no consumer groups: nothing to check.`);
    return empty.length > 0 ? EXIT.refused : EXIT.ok;
  },
};

/**
 * One line per logical stream and group under exclusive ownership: how many of the listed
 * partitions each instance owns, and how many nobody does.
 */
function ownershipLines(groups: GroupOverview[]): string[] {
  const byGroup = new Map<string, { stream: string; group: string; owners: Map<string, number>; free: number }>();
  for (const g of groups) {
    if (!g.owner) continue;
    const stream = partitionOfKey(g.stream)?.stream ?? g.stream;
    const key = `${stream}\u0000${g.group}`;
    const entry = byGroup.get(key) ?? { stream, group: g.group, owners: new Map<string, number>(), free: 0 };
    if (g.owner.owner === null) entry.free++;
    else entry.owners.set(g.owner.owner, (entry.owners.get(g.owner.owner) ?? 0) + 1);
    byGroup.set(key, entry);
  }
  return [...byGroup.values()].map(({ stream, group, owners, free }) => {
    const held = [...owners.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([o, n]) => `${printable(o, 60)} ${n}`);
    const parts = [...held, ...(free > 0 ? [`no owner ${free}`] : [])].join(', ');
    return `~ ${printable(stream)} / ${printable(group)}: exclusive ownership, partitions per instance: ${parts}`;
  });
}
