import type { SearchHit, SearchResult } from '../../operations/search.js';
import { planSearch, type SearchRequest } from '../../operations/search-request.js';
import { intOption, type Parsed, positionals, stringOption } from '../cli-args.js';
import { EXIT } from '../cli.constants.js';
import { COMMON_HELP, type Command } from '../command.interface.js';
import { printable } from '../output.js';
import { formatTable } from '../table.js';
import { UsageError } from '../errors/usage.error.js';
import { timeText } from '../../time-text.js';

/** `search`: the entries of a stream, a group's PEL or the dead letters that match a condition. */
export const searchCommand: Command = {
  name: 'search',
  summary: 'find entries of a stream, a PEL or the dead letters by fields, headers and payload',
  help: `Usage: nest-redis-streams search <stream> [--where <condition>] [--since <when>] [--until <when>]
         [--group <g> | --dead-letters] [--partitions N] [--newest] [--limit N]
         [--budget-entries N] [--budget-ms N] [--cursor <c>]

Reads the stream (or the group's pending entries, or the dead-letter stream) in id order and prints
the entries the condition matches. A read: nothing is changed, nothing is audited.
  --where <condition>   e.g. 'payload.orderId == "A1" && headers.tenant != "x" || payload.total > 100'
                        roots: id, time, fields, headers, payload, pending (with --group),
                        deadLetter (with --dead-letters); operators == != < <= > >= contains
                        startsWith endsWith in [..] exists(..) ! && || ( ); see docs/search.md
  --since/--until <when>  a duration before now (15m, 2h, 7d), an ISO date, ms since the epoch or an id
  --group <g>           the group's pending entries (oldest first only)
  --dead-letters        the stream's dead-letter stream (deadLetter.reason, .error, .group, ...)
  --partitions <n>      every partition stream of <stream>, merged in id order
  --newest              newest first (default: oldest first)
  --limit <n>           matches to print (default 50, at most 1000)
  --budget-entries <n>  entries to look at (default 10000, at most 1000000)
  --budget-ms <n>       milliseconds to spend (default 2000, at most 30000)
  --cursor <c>          go on where a previous search stopped (it keeps its window and order)

${COMMON_HELP}

Exit codes: 0 done (whether or not anything matched), 2 bad arguments or condition, 3 stream or group
not found, 4 Redis failed. The last line says how many entries were looked at and, when the budget
stopped the search, the --cursor to go on with.

Example: nest-redis-streams search orders --where 'payload.total > 100' --since 1h --newest`,
  options: {
    where: { type: 'string' },
    since: { type: 'string' },
    until: { type: 'string' },
    group: { type: 'string' },
    'dead-letters': { type: 'boolean' },
    partitions: { type: 'string' },
    newest: { type: 'boolean' },
    limit: { type: 'string' },
    'budget-entries': { type: 'string' },
    'budget-ms': { type: 'string' },
    cursor: { type: 'string' },
  },
  prepare(parsed) {
    const [stream] = positionals('search', parsed, ['stream']);
    // The same checks the search makes (numbers and their limits, condition, window, cursor).
    const { keys } = planSearch(stream, requestOf(parsed));
    if (keys.length > 1 && stringOption(parsed, 'dead-letter-stream') !== undefined)
      throw new UsageError('--dead-letter-stream names one stream; with --partitions each partition has its own.');
    return { streams: keys };
  },
  async run(ctx, parsed) {
    const [stream] = parsed.positionals;
    const result = await ctx.ops.search(stream, requestOf(parsed));
    if (ctx.json) {
      ctx.printJson(result);
      return EXIT.ok;
    }
    const partitioned = (requestOf(parsed).partitions ?? 1) > 1;
    const headers = [...(partitioned ? ['stream'] : []), 'id', 'time', ...extraHeaders(parsed), 'fields'];
    ctx.print(
      formatTable(
        headers,
        result.items.map((hit) => row(hit, partitioned)),
      ),
    );
    ctx.print(summary(result));
    return EXIT.ok;
  },
};

/** The request as the options say; every number checked here, before connecting. */
function requestOf(parsed: Parsed): SearchRequest {
  const group = stringOption(parsed, 'group');
  const deadLetters = parsed.values['dead-letters'] === true;
  if (group !== undefined && deadLetters) throw new UsageError('Give --group or --dead-letters, not both.');
  const cursor = stringOption(parsed, 'cursor');
  const since = stringOption(parsed, 'since');
  const until = stringOption(parsed, 'until');
  const newest = parsed.values.newest === true;
  if (cursor !== undefined && (since !== undefined || until !== undefined || newest))
    throw new UsageError(
      '--cursor keeps the window and order of the search it came from: leave out --since, --until and --newest.',
    );
  return {
    where: stringOption(parsed, 'where'),
    group,
    deadLetters,
    partitions: intOption(parsed, 'partitions', 1),
    since,
    until,
    newest: newest || undefined,
    limit: intOption(parsed, 'limit', 1),
    budgetEntries: intOption(parsed, 'budget-entries', 1),
    budgetMs: intOption(parsed, 'budget-ms', 1),
    cursor,
  };
}

function extraHeaders(parsed: Parsed): string[] {
  if (parsed.values.group !== undefined) return ['consumer', 'deliveries'];
  if (parsed.values['dead-letters'] === true) return ['reason', 'group', 'error'];
  return [];
}

function row(hit: SearchHit, partitioned: boolean): string[] {
  const extra = hit.pending
    ? [printable(hit.pending.consumer, 24), String(hit.pending.deliveries)]
    : hit.deadLetter
      ? [hit.deadLetter.reason, printable(hit.deadLetter.group, 24), printable(hit.deadLetter.error, 40)]
      : [];
  const fields = hit.fields === null ? '(payload gone)' : hit.fields.map(([n, v]) => `${n}=${v}`).join(' ');
  return [...(partitioned ? [printable(hit.stream, 40)] : []), hit.id, timeText(hit.id), ...extra, printable(fields, 80)];
}

function summary(result: SearchResult): string {
  const head = `${result.matched} matched, ${result.scanned} entries looked at in ${result.elapsedMs} ms`;
  if (result.exhausted) return `${head}; the whole window was read.`;
  const why = { limit: 'the --limit', entries: 'the --budget-entries', time: 'the --budget-ms' }[result.stoppedBy ?? 'limit'];
  return `${head}; stopped by ${why}. more: --cursor ${result.cursor}`;
}
