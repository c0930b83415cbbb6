import { formatDuration } from '../../health/stats-table.js';
import { parseStreamId, parseTime } from '../../operations/stream-position.js';
import { intOption, type Parsed, positionals, stringOption } from '../cli-args.js';
import { EXIT } from '../cli.constants.js';
import { COMMON_HELP, type Command } from '../command.interface.js';
import { printable } from '../output.js';
import { formatTable } from '../table.js';

/** `pending`: a page of a group's PEL (who holds what, for how long, how often delivered). */
export const pendingCommand: Command = {
  name: 'pending',
  summary: "a page of a group's pending entries (PEL) with their payloads",
  help: `Usage: nest-redis-streams pending <stream> <group> [--consumer <name>] [--from <time>] [--to <time>] [--after <id>] [--count N]

Lists pending entries oldest first: id, consumer, idle time (since its last delivery or failure),
delivery count, payload; an entry waiting out a retry's back-off shows "retry in <time>".
  --consumer <name>   only this consumer's entries
  --from/--to <time>  ids are times: ms since the epoch or an ISO date (inclusive)
  --after <id>        the next page starts after this id (printed at the end of a page)
  --count <n>         page size (default 50, at most 1000)

${COMMON_HELP}

Example: nest-redis-streams pending orders payments --consumer pod-7 --count 20`,
  options: {
    consumer: { type: 'string' },
    from: { type: 'string' },
    to: { type: 'string' },
    after: { type: 'string' },
    count: { type: 'string' },
  },
  prepare(parsed) {
    const [stream] = positionals('pending', parsed, ['stream', 'group']);
    pageOf(parsed);
    return { streams: [stream] };
  },
  async run(ctx, parsed) {
    const [stream, group] = parsed.positionals;
    const page = await ctx.ops.pending(stream, group, { consumer: stringOption(parsed, 'consumer'), ...pageOf(parsed) });
    if (ctx.json) {
      ctx.printJson(page);
      return EXIT.ok;
    }
    const now = Date.now();
    const rows = page.items.map((e) => [
      e.id,
      printable(e.consumer, 30),
      formatDuration(e.idleMs) + (e.retryAt === null ? '' : ` (retry in ${formatDuration(Math.max(0, e.retryAt - now))})`),
      String(e.deliveries),
      e.fields === null ? '(payload trimmed)' : printable(e.fields.map(([n, v]) => `${n}=${v}`).join(' '), 60),
    ]);
    ctx.print(formatTable(['id', 'consumer', 'idle', 'deliveries', 'payload'], rows, new Set([2, 3])));
    if (page.next) ctx.print(`more: --after ${page.next}`);
    return EXIT.ok;
  },
};

/** The page asked for; checked in prepare, before connecting. */
function pageOf(parsed: Parsed): { after?: string; from?: number; to?: number; count: number } {
  const after = stringOption(parsed, 'after');
  const from = stringOption(parsed, 'from');
  const to = stringOption(parsed, 'to');
  return {
    after: after === undefined ? undefined : parseStreamId(after, '--after'),
    from: from === undefined ? undefined : parseTime(from),
    to: to === undefined ? undefined : parseTime(to),
    count: Math.min(intOption(parsed, 'count', 1) ?? 50, 1_000),
  };
}
