import { formatDuration } from '../../health/stats-table.js';
import type { CursorPreview, CursorTarget } from '../../operations/group-cursor.js';
import { timePhrase } from '../../time-text.js';
import { parseStreamId, parseTime } from '../../operations/stream-position.js';
import { positionals, stringOption, type Parsed } from '../cli-args.js';
import { EXIT } from '../cli.constants.js';
import { COMMON_HELP, type Command } from '../command.interface.js';
import { escapeControls } from '../output.js';
import { UsageError } from '../errors/usage.error.js';

/** `setid`: move a group's cursor (XGROUP SETID), with a dry run that counts what it would do. */
export const setidCommand: Command = {
  name: 'setid',
  summary: "move a group's cursor to an id, a time or the end (XGROUP SETID), with --dry-run",
  help: `Usage: nest-redis-streams setid <stream> <group> (--id <id> | --time <time> | --end) [--dry-run] [--force]

Moves the group's last-delivered id. Back: the entries after it are delivered again. Forward:
the entries up to it are never delivered (skipped). Pending entries are not touched.
  --id <id>     the new last-delivered id (1700000000000-0)
  --time <t>    deliver every entry from this time on (ms since the epoch or an ISO date)
  --end         skip everything in the stream now
  --dry-run     only say how many entries would be re-delivered or skipped
  --force       move it although consumers of the group are active (they race the move), or
                past the stream's last entry (entries added until then are skipped too)

${COMMON_HELP}

Exit codes: 0 done (or previewed), 2 bad arguments, 3 refused (active consumers, or past the
stream's last entry) or no such group.
Example: nest-redis-streams setid orders payments --time 2024-05-01T12:00:00Z --dry-run`,
  options: {
    id: { type: 'string' },
    time: { type: 'string' },
    end: { type: 'boolean' },
    'dry-run': { type: 'boolean' },
    force: { type: 'boolean' },
  },
  prepare(parsed) {
    const [stream] = positionals('setid', parsed, ['stream', 'group']);
    target(parsed);
    return { streams: [stream] };
  },
  async run(ctx, parsed) {
    const [stream, group] = parsed.positionals;
    const dryRun = parsed.values['dry-run'] === true;
    const preview = dryRun
      ? await ctx.ops.previewCursor(stream, group, target(parsed))
      : await ctx.ops.setCursor(ctx.actor, stream, group, target(parsed), parsed.values.force === true);
    if (ctx.json) ctx.printJson({ dryRun, ...preview });
    else ctx.print(describe(preview, dryRun));
    return EXIT.ok;
  },
};

function target(parsed: Parsed): CursorTarget {
  const id = stringOption(parsed, 'id');
  const time = stringOption(parsed, 'time');
  const end = parsed.values.end === true;
  const given = [id !== undefined, time !== undefined, end].filter(Boolean).length;
  if (given !== 1)
    throw new UsageError(
      '"setid" needs exactly one of --id <id>, --time <time> or --end. Run "nest-redis-streams setid --help".',
    );
  // Checked before connecting, so a typo is a usage error whatever the stream holds.
  if (id !== undefined) return { id: parseStreamId(id, '--id') };
  if (time !== undefined) return { time: parseTime(time) };
  return { end: true };
}

function describe(p: CursorPreview, dryRun: boolean, now = Date.now()): string {
  const count = `${p.entries}${p.capped ? '+' : ''}`;
  const effect =
    p.effect === 'none'
      ? 'nothing changes (the cursor is already there)'
      : p.effect === 'redeliver'
        ? `${count} entries ${dryRun ? 'would be' : 'will be'} delivered again`
        : `${count} entries ${dryRun ? 'would be' : 'are'} skipped (never delivered)`;
  const lines = [
    `${dryRun ? 'dry run' : 'moved'}: group "${escapeControls(p.group)}" of "${escapeControls(p.stream)}" from ${p.from} to ${p.to}`,
    `${effect}; ${p.pending} pending entries stay pending`,
  ];
  if (p.pastEnd && p.skipsAddedUntil !== null) {
    const ahead = p.skipsAddedUntil - now;
    lines.push(
      `! past the stream's last entry ${p.lastId}: every entry added before ${timePhrase(p.skipsAddedUntil)}${ahead > 0 ? ` (${formatDuration(ahead)} from now)` : ''} ${dryRun ? 'would be' : 'is'} skipped too${dryRun ? ' (the move needs --force)' : ''}`,
    );
  }
  if (p.activeConsumers.length > 0)
    lines.push(
      `active consumers: ${p.activeConsumers.map((c) => escapeControls(c)).join(', ')}${dryRun ? ' (the move needs --force)' : ''}`,
    );
  return lines.join('\n');
}
