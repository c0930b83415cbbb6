import { findDeadLetterStreams } from '../../database/reconcile/dead-letter-streams.js';
import { reconcile, type ReconcileReport } from '../../database/reconcile/reconcile.js';
import { DeadLetterService } from '../../dead-letter/dead-letter.service.js';
import { stringOption } from '../cli-args.js';
import type { CliContext } from '../cli-context.js';
import { CLI_DEFAULTS, EXIT } from '../cli.constants.js';
import { COMMON_HELP, type Command } from '../command.interface.js';
import { databaseUrlFrom, loadPg, openDatabase } from '../database-connection.js';
import { reconcileWindow } from '../reconcile-window.js';
import { escapeControls, printable } from '../output.js';
import { formatTable } from '../table.js';
import { UsageError } from '../errors/usage.error.js';

const REQUIRED = ['stream', 'group', 'handler'] as const;
/** Ids named on stderr when the check fails; the table and --json have them all. */

/** `reconcile`: outbox rows of a stream against the inbox rows of a group's handler, by event id. */
export const reconcileCommand: Command = {
  name: 'reconcile',
  summary: 'outbox events of a stream vs inbox effects of a group: missing, duplicated, dead-lettered',
  help: `Usage: nest-redis-streams reconcile --database-url <url> --stream <key> --group <g> --handler <name> [--since <when>] [--until <when>]

Compares, by event id, the events the outbox (nrs_outbox) holds for <stream> from --since
(inclusive) to --until (exclusive) with the inbox rows (nrs_inbox) of <group> and <handler>,
under any stream key (partitions included). Prints each event that is missing (no effect, not
dead-lettered), duplicated (more than one effect) or dead-lettered (parked in the dead-letter
stream by <group>), and exits 1 naming them when any is missing or duplicated. "Pending is 0"
proves nothing on its own: an ack before COMMIT also empties the PEL.

  --database-url <url>  PostgreSQL with the library's tables (default: $DATABASE_URL);
                        needs node-postgres: npm install pg
  --stream <key>        the stream the outbox publishes to (outbox.add(tx, <key>, ...))
  --group <g>           the consumer group whose inbox rows are the effects
  --handler <name>      the inbox handler name (inbox.run(ctx, '<name>', ...))
  --since <when>        window start (default 24h): an ISO date, ms since the epoch, a stream
                        id (by its time), a duration ago (15m, 2h, 7d) or "now"
  --until <when>        window end, same forms (default now). Events added in the last moments
                        may still be on their way: --until 5m leaves them out.
  Dead letters are read from <stream>:dlq and, for a partitioned stream, from each partition's
  (<stream>:{<stream>:N}:dlq, found by SCAN), or from --dead-letter-stream alone.

${COMMON_HELP}

Exit codes: 0 nothing missing or duplicated, 1 events missing or duplicated (named on stderr),
2 bad arguments, 4 PostgreSQL or Redis unreachable (or pg not installed).
Example: nest-redis-streams reconcile --database-url postgres://app@db:5432/shop --stream orders --group payments --handler payments.charge --since 2h --until 5m`,
  options: {
    'database-url': { type: 'string' },
    stream: { type: 'string' },
    group: { type: 'string' },
    handler: { type: 'string' },
    since: { type: 'string' },
    until: { type: 'string' },
  },
  prepare(parsed, env) {
    const missing = REQUIRED.filter((name) => !stringOption(parsed, name));
    if (missing.length > 0) {
      throw new UsageError(
        `"reconcile" needs ${missing.map((m) => `--${m} <${m}>`).join(' ')}. Run "nest-redis-streams reconcile --help".`,
      );
    }
    if (parsed.positionals.length > 0) {
      throw new UsageError(
        `"reconcile" takes options only; unexpected "${parsed.positionals[0]}". Run "nest-redis-streams reconcile --help".`,
      );
    }
    reconcileWindow(stringOption(parsed, 'since'), stringOption(parsed, 'until'));
    // Before connecting to Redis: a missing database URL is a usage error whether Redis answers or not.
    databaseUrlFrom(parsed, env);
    // Before connecting anywhere: without node-postgres the command cannot run at all.
    loadPg();
    return { streams: [stringOption(parsed, 'stream') as string] };
  },
  async run(ctx, parsed) {
    const url = databaseUrlFrom(parsed, ctx.env);
    const stream = stringOption(parsed, 'stream') as string;
    const group = stringOption(parsed, 'group') as string;
    const handler = stringOption(parsed, 'handler') as string;
    const window = reconcileWindow(stringOption(parsed, 'since'), stringOption(parsed, 'until'));
    const explicit = stringOption(parsed, 'dead-letter-stream');
    const deadLetterStreams = explicit
      ? [explicit]
      : await findDeadLetterStreams(ctx.redis, stream, parsed.values.cluster === true);
    const deadLetterStream = deadLetterStreams[0];
    const database = await openDatabase(url);
    let report: ReconcileReport;
    try {
      report = await reconcile(database.db, {
        ...window,
        source: { outboxStream: stream },
        target: { group, handler },
        deadLetters: { service: new DeadLetterService(ctx.redis), stream: deadLetterStreams },
      });
    } catch (err) {
      throw explainQueryError(err, database.where);
    } finally {
      await database.close();
    }
    const scope = {
      stream,
      group,
      handler,
      from: window.from.toISOString(),
      to: window.to.toISOString(),
      deadLetterStream,
      deadLetterStreams,
    };
    if (ctx.json) ctx.printJson({ ...scope, ...report });
    else printReport(ctx, scope, report);
    const failures = failureLines(report);
    if (failures.length === 0) return EXIT.ok;
    ctx.warn(
      `Not reconciled (${escapeControls(stream)} -> ${escapeControls(group)} / ${escapeControls(handler)}): ${failures.join('; ')}.`,
    );
    return EXIT.checkFailed;
  },
};

function printReport(
  ctx: CliContext,
  scope: { stream: string; group: string; handler: string; from: string; to: string; deadLetterStreams: string[] },
  r: ReconcileReport,
): void {
  ctx.print(
    `outbox stream "${printable(scope.stream)}" -> inbox of group "${printable(scope.group)}", handler "${printable(scope.handler)}"`,
  );
  const [own, ...partitions] = scope.deadLetterStreams;
  const more = partitions.length
    ? ` and ${partitions.length} partition dead-letter stream${partitions.length > 1 ? 's' : ''}`
    : '';
  ctx.print(`window ${scope.from} to ${scope.to}; dead letters from ${printable(own)}${more}`);
  ctx.print(
    `expected ${r.expected}, applied once ${r.appliedOnce}, missing ${r.missing.length}, duplicated ${r.duplicated.length}, dead-lettered ${r.deadLettered.length}`,
  );
  ctx.print('');
  const rows = [
    ...r.missing.map((id) => [printable(id), 'missing', '0']),
    ...r.duplicated.map((d) => [printable(d.eventId), 'duplicated', String(d.effects)]),
    ...r.deadLettered.map((id) => [printable(id), 'dead-lettered', '0']),
  ];
  ctx.print(formatTable(['event id', 'status', 'effects'], rows, new Set([2])));
}

function failureLines(r: ReconcileReport): string[] {
  const named = (ids: string[]) =>
    ids.slice(0, CLI_DEFAULTS.namedIds).join(', ') +
    (ids.length > CLI_DEFAULTS.namedIds ? ` and ${ids.length - CLI_DEFAULTS.namedIds} more` : '');
  const lines: string[] = [];
  if (r.missing.length > 0) lines.push(`${r.missing.length} missing (${named(r.missing.map((id) => printable(id)))})`);
  if (r.duplicated.length > 0) {
    const ids = r.duplicated.map((d) => `${printable(d.eventId)} x${d.effects}`);
    lines.push(`${r.duplicated.length} duplicated (${named(ids)})`);
  }
  return lines;
}

/** A database without the library's tables gets a message saying how to create them. */
function explainQueryError(err: unknown, where: string): unknown {
  if ((err as { code?: string }).code !== '42P01') return err;
  return new Error(
    `${(err as Error).message} in ${where}: the library's tables are not there. Apply its migrations (applyMigrations(db), or the SQL in the package's migrations/ folder) or point --database-url at the service's database.`,
    { cause: err },
  );
}
