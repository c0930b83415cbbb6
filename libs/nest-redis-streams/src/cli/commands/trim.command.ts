import { OperationError } from '../../operations/errors/operation.error.js';
import { intOption, positionals } from '../cli-args.js';
import { EXIT } from '../cli.constants.js';
import { COMMON_HELP, type Command } from '../command.interface.js';
import { escapeControls } from '../output.js';
import { UsageError } from '../errors/usage.error.js';

/** `trim --safe`: trim a stream without deleting what a consumer group still needs. */
export const trimCommand: Command = {
  name: 'trim',
  summary: 'trim a stream, never below what a consumer group still needs (--safe)',
  help: `Usage: nest-redis-streams trim <stream> --safe (--max-len N | --min-age MS)

Trims with trimSafely: nothing a consumer group has not acknowledged is removed (pending entries
and entries not yet delivered stay). Plain MAXLEN trimming deletes unprocessed entries, so this
command only trims safely and --safe must be given.
  --max-len <n>    keep about this many of the newest entries
  --min-age <ms>   remove entries older than this

${COMMON_HELP}

Exit codes: 0 done, 2 bad arguments, 3 no such stream, 4 Redis failed.
Example: nest-redis-streams trim orders --safe --max-len 100000`,
  options: {
    safe: { type: 'boolean' },
    'max-len': { type: 'string' },
    'min-age': { type: 'string' },
  },
  prepare(parsed) {
    const [stream] = positionals('trim', parsed, ['stream']);
    if (parsed.values.safe !== true) {
      throw new UsageError(
        '"trim" only trims safely (never below what a group still needs): add --safe. A plain MAXLEN trim can delete unprocessed entries.',
      );
    }
    const maxLen = intOption(parsed, 'max-len', 0);
    const minAge = intOption(parsed, 'min-age', 1);
    if (maxLen === undefined && minAge === undefined)
      throw new UsageError('"trim" needs --max-len <n> or --min-age <ms> (or both).');
    return { streams: [stream] };
  },
  async run(ctx, parsed) {
    const [stream] = parsed.positionals;
    // XINFO STREAM, not EXISTS: the operator's ACL in the README grants the one and not the other.
    // A key of another type goes on to the trim, which refuses it naming its type (exit 3).
    await ctx.redis.xinfo('STREAM', stream).catch((err: Error) => {
      if (err.message.startsWith('WRONGTYPE')) return;
      if (!/no such key/i.test(err.message)) throw err;
      throw new OperationError('not-found', `Stream "${stream}" does not exist: nothing to trim (check the key, and --url).`);
    });
    const result = await ctx.ops.trim(ctx.actor, stream, {
      maxLen: intOption(parsed, 'max-len', 0),
      minIdAgeMs: intOption(parsed, 'min-age', 1),
    });
    if (ctx.json) ctx.printJson(result);
    else
      ctx.print(
        `trimmed ${result.removed} entries from "${escapeControls(stream)}" (${result.method}${result.floor ? `, floor ${result.floor}` : ''})`,
      );
    return EXIT.ok;
  },
};
