import { intOption, positionals, type Parsed } from '../cli-args.js';
import type { CliContext } from '../cli-context.js';
import { BIN, EXIT } from '../cli.constants.js';
import { COMMON_HELP, type Command } from '../command.interface.js';
import { escapeControls, printable } from '../output.js';
import { formatTable } from '../table.js';
import { timeText } from '../../time-text.js';

/** `scheduled <stream>` and `scheduled cancel <stream> <member>...`: a stream's delayed entries. */
export const scheduledCommand: Command = {
  name: 'scheduled',
  summary: "list a stream's scheduled (delayed) entries, or cancel them by event id",
  help: `Usage:
  nest-redis-streams scheduled <stream> [--count N]
  nest-redis-streams scheduled cancel <stream> <member>...

Entries emitted with delayMs/deliverAt (and handlers' long RetryLaters) wait in the stream's
schedule until a server's mover adds them to the stream. The list shows how many wait, the next
due time, how long the first one is overdue (it grows when no server runs the mover: start one,
or check scheduleCheckMs), and the first entries by due time, each with its member: a delayed
emit's event id, or nrs:retry:<entry id>:<group> for a RetryLater's copy (one per group). Records
that hold no valid entry (written by hand, or damaged) are listed as malformed; a mover sets them
aside and never adds them. cancel removes entries that still wait (by member, or a delayed emit's
event id) and records set aside; each cancel is recorded in the audit stream. A partitioned stream
has one schedule per partition: name the partition stream (e.g. orders:{orders:3}).
  --count N   entries listed (default 20, at most 1000)

${COMMON_HELP}

Exit codes: 0 done (malformed records included), 2 bad arguments, 3 a member was not scheduled or a
schedule key holds another type, 4 Redis failed.`,
  options: { count: { type: 'string' } },
  prepare(parsed) {
    const cancel = isCancel(parsed);
    const given = positionals('scheduled', parsed, cancel ? ['cancel', 'stream', 'member'] : ['stream'], cancel);
    intOption(parsed, 'count', 1);
    return { streams: [cancel ? given[1] : given[0]] };
  },
  async run(ctx, parsed) {
    if (!isCancel(parsed)) return list(ctx, parsed, parsed.positionals[0]);
    const [, stream, ...eventIds] = parsed.positionals;
    const results = [];
    for (const eventId of eventIds) results.push(await ctx.ops.cancelScheduled(ctx.actor, stream, eventId));
    if (ctx.json) ctx.printJson(results);
    else for (const r of results) ctx.print(`cancelled ${escapeControls(r.cancelled)}`);
    return EXIT.ok;
  },
};

/** `scheduled cancel …` with a stream and ids; `scheduled cancel` alone lists a stream named "cancel". */
function isCancel(parsed: Parsed): boolean {
  return parsed.positionals[0] === 'cancel' && parsed.positionals.length > 1;
}

async function list(ctx: CliContext, parsed: Parsed, stream: string): Promise<number> {
  const summary = await ctx.ops.scheduled(stream, Math.min(intOption(parsed, 'count', 1) ?? 20, 1_000));
  if (ctx.json) {
    ctx.printJson(summary);
    return EXIT.ok;
  }
  const now = summary.serverTime;
  const rows = summary.entries.map((e) => [
    printable(e.member, 40),
    e.eventId === null ? '-' : printable(e.eventId, 40),
    e.group === null ? 'all' : printable(e.group, 30),
    Number.isFinite(e.dueAt) ? timeText(e.dueAt) : '-',
    e.malformed !== undefined ? 'never (malformed)' : e.dueAt <= now ? `overdue ${now - e.dueAt} ms` : `in ${e.dueAt - now} ms`,
    e.malformed !== undefined ? `malformed: ${e.malformed}` : printable(dataOf(e.fields), 60),
  ]);
  ctx.print(formatTable(['member', 'event id', 'group', 'due at', 'when', 'data'], rows));
  const next = summary.nextDueAt === null ? 'none' : timeText(summary.nextDueAt);
  ctx.print(`scheduled ${summary.count}; next due ${next}; oldest overdue ${summary.oldestOverdueMs} ms`);
  const { malformed } = summary;
  if (malformed.count > 0) {
    ctx.print(
      `set aside ${malformed.count} malformed record(s), never added to the stream (written by hand, or damaged); ` +
        `remove one with: ${BIN} scheduled cancel ${escapeControls(stream)} <member>`,
    );
    for (const r of malformed.records) ctx.print(`  ${printable(r.member, 80)}: ${r.problem}`);
  }
  return EXIT.ok;
}

function dataOf(fields: string[]): string {
  const at = fields.indexOf('data');
  return at >= 0 && at % 2 === 0 ? (fields[at + 1] ?? '') : '';
}
