import { listParked, type ParkedOutboxEvent } from '../../database/outbox/parked-events.js';
import { intOption, stringOption } from '../cli-args.js';
import { CLI_DEFAULTS, EXIT } from '../cli.constants.js';
import { COMMON_HELP, type Command } from '../command.interface.js';
import { databaseUrlFrom, loadPg, openDatabase } from '../database-connection.js';
import { printable } from '../output.js';
import { formatTable } from '../table.js';
import { UsageError } from '../errors/usage.error.js';
import { timeText } from '../../time-text.js';

/** Ids named on stderr when events are parked; the table and --json have them all. */

/** `outbox`: the outbox events the relay parked (it can never publish them as they are). */
export const outboxCommand: Command = {
  name: 'outbox',
  summary: 'outbox events parked by the relay (too large, WRONGTYPE, NOPERM) and what waits behind them',
  help: `Usage: nest-redis-streams outbox --database-url <url> [--stream <pattern>] [--limit <n>]

Lists the events of the outbox table (nrs_outbox) that the relay parked because their publish can
never succeed as they are: over the client's maxPayloadBytes, a target key that is not a stream
(WRONGTYPE), a Redis user the ACL refuses (NOPERM). Each row shows the error and how many later
events of its partition key wait behind it (they keep their order). Read-only: once the cause is
fixed, re-publish them with outbox.republishParked([ids]), or drop them with
outbox.discardParked([ids]) (docs/OPERATIONS.md, RedisStreamsOutboxEventsParked).

  --database-url <url>  PostgreSQL with the library's tables (default: $DATABASE_URL);
                        needs node-postgres: npm install pg
  --stream <pattern>    only events for this stream (outbox.add(tx, <pattern>, ...))
  --limit <n>           most events listed, oldest first (default 100)

${COMMON_HELP}

Exit codes: 0 nothing parked, 1 events parked (named on stderr), 2 bad arguments,
4 PostgreSQL unreachable (or pg not installed). It reads only PostgreSQL, so it runs while Redis is away.
Example: nest-redis-streams outbox --database-url postgres://app@db:5432/shop --stream orders`,
  needsRedis: false,
  options: {
    'database-url': { type: 'string' },
    stream: { type: 'string' },
    limit: { type: 'string' },
  },
  prepare(parsed, env) {
    if (parsed.positionals.length > 0) {
      throw new UsageError(
        `"outbox" takes options only; unexpected "${parsed.positionals[0]}". Run "nest-redis-streams outbox --help".`,
      );
    }
    intOption(parsed, 'limit', 1);
    // Before connecting to Redis: a missing database URL is a usage error whether Redis answers or not.
    databaseUrlFrom(parsed, env);
    loadPg();
    return {};
  },
  async run(ctx, parsed) {
    const database = await openDatabase(databaseUrlFrom(parsed, ctx.env));
    let parked: ParkedOutboxEvent[];
    try {
      parked = await database.db.transaction((tx) =>
        listParked(database.db.executor(tx), { stream: stringOption(parsed, 'stream'), limit: intOption(parsed, 'limit', 1) }),
      );
    } catch (err) {
      if ((err as { code?: string }).code === '42703' || (err as { code?: string }).code === '42P01') {
        throw new Error(
          `${(err as Error).message} in ${database.where}: the outbox table lacks the library's migrations (003_outbox_parked.sql adds parked events). Apply them (applyMigrations(db)) or point --database-url at the service's database.`,
          { cause: err },
        );
      }
      throw err;
    } finally {
      await database.close();
    }
    if (ctx.json) {
      ctx.printJson({ parked });
    } else {
      const rows = parked.map((p) => [
        printable(p.eventId),
        printable(p.stream),
        p.partitionKey === null ? '-' : printable(p.partitionKey),
        String(p.waiting),
        timeText(new Date(p.parkedAt).getTime()),
        printable(p.lastError, 120),
      ]);
      ctx.print(formatTable(['event id', 'stream', 'key', 'waiting', 'parked at', 'error'], rows, new Set([3])));
    }
    if (parked.length === 0) return EXIT.ok;
    const ids = parked.slice(0, CLI_DEFAULTS.namedIds).map((p) => printable(p.eventId));
    const more = parked.length > CLI_DEFAULTS.namedIds ? ` and ${parked.length - CLI_DEFAULTS.namedIds} more` : '';
    ctx.warn(
      `${parked.length} outbox event(s) parked (${ids.join(', ')}${more}): fix the cause, then outbox.republishParked([ids]) or outbox.discardParked([ids]).`,
    );
    return EXIT.checkFailed;
  },
};
