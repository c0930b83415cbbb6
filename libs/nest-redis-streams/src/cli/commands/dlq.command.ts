import type { DeadLetter } from '../../dead-letter/dead-letter.service.js';
import { parseStreamId } from '../../operations/stream-position.js';
import { intOption, positionals, stringOption, type Parsed } from '../cli-args.js';
import type { CliContext } from '../cli-context.js';
import { EXIT } from '../cli.constants.js';
import { COMMON_HELP, type Command } from '../command.interface.js';
import { escapeControls, printable } from '../output.js';
import { formatTable } from '../table.js';
import { UsageError } from '../errors/usage.error.js';
import { canaryOptionsOf, printFailureGroups, printRedrivePreview, runCanary } from './dlq-groups.js';
import { resolveCanaryOptions } from '../../operations/canary-options.js';
import { checkFilter } from '../../operations/dead-letters.js';
import { checkKeyField } from '../../operations/redrive-preview.js';
import { timeText } from '../../time-text.js';

const ACTIONS = ['groups', 'list', 'show', 'redrive', 'discard'];

/** `dlq groups|list|show|redrive|discard`: the dead-letter stream of a source stream. */
export const dlqCommand: Command = {
  name: 'dlq',
  summary: 'group by cause, list, show, re-drive or discard dead letters (tombstones count as losses)',
  help: `Usage:
  nest-redis-streams dlq groups [<stream>]
  nest-redis-streams dlq list <stream> [--reason <r>] [--group <g>] [--cause <fp>] [--after <id>] [--count N]
  nest-redis-streams dlq show <stream> <id>
  nest-redis-streams dlq redrive <stream> <id>...
  nest-redis-streams dlq redrive <stream> --all | [--reason <r>] [--group <g>] [--cause <fp>] [--up-to <id>] [--dry-run [--key <field>]]
  nest-redis-streams dlq redrive <stream> --cause <fp> --canary N [--rate R] [--max-failure-ratio F] [--settle-ms MS]
  nest-redis-streams dlq discard <stream> <id>...

<stream> is the source stream; its dead-letter stream is <stream>:dlq unless --dead-letter-stream.
list prints the records and a tally by reason; tombstones (payload-trimmed, trimmed-undelivered)
are entries lost to trimming and cannot be re-driven. redrive re-adds the original fields to the
source stream for the group that parked them (a new id, a fresh delivery budget); with filters or
--all it re-drives every matching record that has a payload. Every re-drive and discard is
recorded in the audit stream. groups lists the failure groups (error class and message with
numbers, ids and quoted values folded) with a fingerprint each; without <stream>, of every
stream with consumer groups. Each reads at most 10,000 records per stream and says so.
  --reason <r>   max-deliveries, non-retryable, undecodable, undecodable-event-id, payload-trimmed,
                 trimmed-undelivered
  --group <g>    the group that parked it
  --cause <fp>   the failure group's fingerprint (12 hex digits, from dlq groups)
  --all          redrive: every record (tombstones are skipped and counted)
  --dry-run      redrive: say how many, which groups and keys, oldest and newest; change nothing
  --up-to <id>   redrive: read no dead letter newer than <id> (a dry run's "up to", to re-drive
                 exactly what it counted); without it, up to the newest when the command began
  --key <field>  with --dry-run: the payload field that holds the ordering key
  --canary N     redrive: N first, watched until acknowledged or parked again; then the rest at
                 --rate per second (10), stopping by itself once more than --max-failure-ratio
                 (0.2) of them failed again; --settle-ms (30000): longer undecided counts as failed.
                 Runs in the foreground; exit 1 when it stopped, with the reason. One canary per
                 stream and cause at a time: while one runs anywhere, exit 3 naming its run id.

${COMMON_HELP}

Exit codes: 0 done, 2 bad arguments, 3 a record is missing or is a tombstone, or a canary of that
cause is running, 4 Redis failed.`,
  options: {
    reason: { type: 'string' },
    group: { type: 'string' },
    after: { type: 'string' },
    count: { type: 'string' },
    all: { type: 'boolean' },
    cause: { type: 'string' },
    'dry-run': { type: 'boolean' },
    key: { type: 'string' },
    canary: { type: 'string' },
    rate: { type: 'string' },
    'max-failure-ratio': { type: 'string' },
    'settle-ms': { type: 'string' },
    'up-to': { type: 'string' },
  },
  prepare(parsed) {
    const action = parsed.positionals[0];
    if (!ACTIONS.includes(action)) {
      throw new UsageError(
        `"dlq" needs an action: ${ACTIONS.join(', ')}${action ? `; got "${action}"` : ''}. Run "nest-redis-streams dlq --help".`,
      );
    }
    if (action === 'groups') {
      const [, stream] = positionals('dlq groups', parsed, ['action'], true);
      if (parsed.positionals.length > 2)
        throw new UsageError(`"dlq groups" takes at most one <stream>; got "${parsed.positionals[2]}".`);
      return stream === undefined ? {} : { streams: [stream] };
    }
    if ((parsed.values['dry-run'] || parsed.values.key !== undefined) && !(action === 'redrive' && bulk(parsed))) {
      throw new UsageError(
        '--dry-run and --key go with a filtered re-drive: dlq redrive <stream> --cause <fp> --dry-run [--key <field>].',
      );
    }
    if (parsed.values.key !== undefined && !parsed.values['dry-run']) throw new UsageError('--key goes with --dry-run.');
    const canaryFlags = ['rate', 'max-failure-ratio', 'settle-ms'].filter((f) => parsed.values[f] !== undefined);
    if (parsed.values.canary === undefined && canaryFlags.length > 0)
      throw new UsageError(`--${canaryFlags[0]} goes with --canary N.`);
    if (parsed.values.canary !== undefined && (parsed.values.cause === undefined || parsed.values['dry-run'])) {
      throw new UsageError('--canary re-drives one failure group: dlq redrive <stream> --cause <fp> --canary N (no --dry-run).');
    }
    const needsIds = action === 'show' || action === 'discard' || (action === 'redrive' && !bulk(parsed));
    const [, stream, ...ids] = positionals(
      `dlq ${action}`,
      parsed,
      needsIds ? ['action', 'stream', 'id'] : ['action', 'stream'],
      needsIds,
    );
    if (action === 'show' && ids.length > 1) throw new UsageError(`"dlq show" takes one id; got ${ids.length}.`);
    if (action === 'redrive' && bulk(parsed) && ids.length > 0) {
      throw new UsageError('"dlq redrive" takes either ids or --all/--reason/--group, not both.');
    }
    for (const id of ids) parseStreamId(id, 'A dead-letter id');
    const after = stringOption(parsed, 'after');
    if (after !== undefined) parseStreamId(after, '--after');
    const upTo = stringOption(parsed, 'up-to');
    if (upTo !== undefined && !(action === 'redrive' && bulk(parsed) && parsed.values.canary === undefined)) {
      throw new UsageError(
        '--up-to goes with a filtered re-drive or its dry run: dlq redrive <stream> --cause <fp> --up-to <id>.',
      );
    }
    // The checks the operation makes (a cause is a fingerprint, a key field's length, the
    // canary's ranges), here too: bad input is a usage error whether Redis answers or not.
    const filter = checkFilter(filterOf(parsed));
    checkKeyField(stringOption(parsed, 'key'));
    if (parsed.values.canary !== undefined) resolveCanaryOptions(canaryOptionsOf(parsed, filter.cause!));
    intOption(parsed, 'count', 1);
    return { streams: [stream] };
  },
  async run(ctx, parsed) {
    const [action, stream, ...ids] = parsed.positionals;
    if (action === 'groups') return printFailureGroups(ctx, stream);
    if (action === 'list') return list(ctx, parsed, stream);
    if (action === 'show') return show(ctx, stream, ids[0]);
    if (action === 'redrive' && bulk(parsed)) {
      const filter = filterOf(parsed);
      if (parsed.values.canary !== undefined) return runCanary(ctx, parsed, stream, filter.cause!);
      if (parsed.values['dry-run']) {
        return printRedrivePreview(ctx, stream, await ctx.ops.previewRedrive(stream, filter, stringOption(parsed, 'key')));
      }
      const report = await ctx.ops.redriveMatching(ctx.actor, stream, filter);
      if (ctx.json) ctx.printJson(report);
      else {
        for (const { id, newId } of report.redriven) ctx.print(`re-driven ${id} -> ${escapeControls(stream)} ${newId}`);
        ctx.print(
          `${report.redriven.length} re-driven, ${report.tombstones} tombstones left, ${report.failed.length} failed${report.more ? ' (scan limit reached: run again)' : ''}`,
        );
        for (const f of report.failed) ctx.warn(`${f.id}: ${escapeControls(f.error)}`);
      }
      return report.failed.length > 0 ? EXIT.refused : EXIT.ok;
    }
    const results = [];
    for (const id of ids) {
      results.push(
        action === 'redrive' ? await ctx.ops.redrive(ctx.actor, stream, id) : await ctx.ops.discard(ctx.actor, stream, id),
      );
    }
    if (ctx.json) ctx.printJson(results);
    else
      for (const r of results)
        ctx.print('newId' in r ? `re-driven ${r.id} -> ${escapeControls(stream)} ${r.newId}` : `discarded ${r.discarded}`);
    return EXIT.ok;
  },
};

function bulk(parsed: Parsed): boolean {
  const { all, reason, group, cause } = parsed.values;
  return all === true || reason !== undefined || group !== undefined || cause !== undefined;
}

function filterOf(parsed: Parsed) {
  const upTo = stringOption(parsed, 'up-to');
  return {
    ...{ reason: stringOption(parsed, 'reason'), group: stringOption(parsed, 'group'), cause: stringOption(parsed, 'cause') },
    upTo: upTo === undefined ? undefined : parseStreamId(upTo, '--up-to'),
  };
}

async function list(ctx: CliContext, parsed: Parsed, stream: string): Promise<number> {
  const after = stringOption(parsed, 'after');
  const filter = filterOf(parsed);
  const page = await ctx.ops.listDeadLetters(stream, filter, {
    after: after === undefined ? undefined : parseStreamId(after, '--after'),
    count: Math.min(intOption(parsed, 'count', 1) ?? 50, 1_000),
  });
  const tally = await ctx.ops.tallyDeadLetters(stream);
  if (ctx.json) {
    ctx.printJson({ ...page, tally });
    return EXIT.ok;
  }
  const rows = page.items.map((d) => [
    d.id,
    d.reason,
    printable(d.group ?? '', 24),
    String(d.deliveries),
    d.originalId ?? '',
    printable(d.errorClass, 20),
    printable(d.error, 60),
  ]);
  ctx.print(formatTable(['id', 'reason', 'group', 'deliveries', 'original id', 'class', 'error'], rows, new Set([3])));
  if (page.next) ctx.print(`more: --after ${page.next}`);
  const reasons = Object.entries(tally.byReason).map(([r, n]) => `${printable(r, 60)} ${n}`);
  ctx.print(`total ${tally.total}${reasons.length ? ` (${reasons.join(', ')})` : ''}; lost to trimming: ${tally.lost}`);
  return EXIT.ok;
}

async function show(ctx: CliContext, stream: string, id: string): Promise<number> {
  const letter = await ctx.ops.deadLetter(stream, id);
  if (!letter) {
    ctx.warn(`No dead letter ${id} for stream "${escapeControls(stream)}" (already re-driven or discarded).`);
    return EXIT.refused;
  }
  if (ctx.json) ctx.printJson(letter);
  else ctx.print(describe(letter));
  return EXIT.ok;
}

function describe(d: DeadLetter): string {
  const meta = [
    ['id', d.id],
    ['reason', d.reason],
    ['stream', d.stream],
    ['original id', d.originalId],
    ['group', d.group],
    ['consumer', d.consumer],
    ['deliveries', String(d.deliveries)],
    ['parked at', timeText(d.parkedAt)],
    ['error class', d.errorClass],
    ['error', d.error],
  ];
  const fields = Object.entries(d.fields).map(([n, v]) => `  ${printable(n, 40)} = ${printable(v, 200)}`);
  return [...meta.map(([k, v]) => `${k.padEnd(12)} ${printable(v ?? '', 200)}`), 'fields:', ...fields].join('\n');
}
