import { checkPartitions } from '../../operations/stream-position.js';
import { formatDuration } from '../../health/stats-table.js';
import { partitionStreams } from '../../keys/index.js';
import type { BlockedKey } from '../../operations/blocked-keys.js';
import { intOption, positionals, stringOption } from '../cli-args.js';
import type { CliContext } from '../cli-context.js';
import { EXIT } from '../cli.constants.js';
import { COMMON_HELP, type Command } from '../command.interface.js';
import { printable } from '../output.js';
import { formatTable } from '../table.js';
import { timeText } from '../../time-text.js';

/** `blocked <stream>`: the ordering keys held back by onDeadLetter: 'block-key', per group. */
export const blockedCommand: Command = {
  name: 'blocked',
  summary: "ordering keys held back by onDeadLetter: 'block-key': blocking entry, dead letter, how many wait",
  help: `Usage: nest-redis-streams blocked <stream> [--group <g>] [--partitions N]

A handler with orderingKey and onDeadLetter: 'block-key' holds the later entries of a key whose
entry failed, until that entry is re-driven and succeeds or is discarded. This lists the blocked
keys (a read: nothing is changed): state (failing: still retried; parked: in the dead-letter
stream; releasing: held entries going back one at a time), the blocking entry, its dead letter,
how many entries wait and since when, oldest block first per group. To release a key, re-drive
its dead letter (dlq redrive <stream> <id>) or discard it (dlq discard <stream> <id>).
  --group <g>        only this group (default: every group of the stream)
  --partitions <n>   every partition stream of <stream> (orders:{orders:0} ...)

${COMMON_HELP}

Exit codes: 0 done (whether or not a key is blocked), 2 bad arguments, 3 stream not found,
4 Redis failed.
Example: nest-redis-streams blocked orders --group billing`,
  options: { group: { type: 'string' }, partitions: { type: 'string' } },
  prepare(parsed) {
    const [stream] = positionals('blocked', parsed, ['stream']);
    return { streams: partitionStreams(stream, checkPartitions(intOption(parsed, 'partitions', 1)) ?? 1) };
  },
  async run(ctx, parsed) {
    const [stream] = parsed.positionals;
    const blocked = await ctx.ops.blockedKeys(stream, {
      group: stringOption(parsed, 'group'),
      partitions: intOption(parsed, 'partitions', 1),
    });
    if (ctx.json) ctx.printJson(blocked);
    else printBlocked(ctx, blocked, (intOption(parsed, 'partitions', 1) ?? 1) > 1);
    return EXIT.ok;
  },
};

function printBlocked(ctx: CliContext, blocked: BlockedKey[], partitioned: boolean): void {
  if (blocked.length === 0) {
    ctx.print('no blocked keys');
    return;
  }
  const now = Date.now();
  const since = (b: BlockedKey) => (b.since > 0 ? timeText(b.since) : '?');
  const rows = blocked.map((b) => [
    ...(partitioned ? [printable(b.stream)] : []),
    printable(b.group, 30),
    printable(b.key, 40),
    b.state,
    // Ids come from a record anyone with write access may have edited: escaped like every other value.
    printable(b.current ? `${b.blockingEntry} (running ${b.current})` : b.blockingEntry, 60),
    b.deadLetter ? printable(b.deadLetter, 40) : '-',
    String(b.waiting),
    since(b),
    b.since > 0 ? formatDuration(Math.max(0, now - b.since)) : '?',
  ]);
  const headers = ['group', 'key', 'state', 'blocking entry', 'dead letter', 'waiting', 'since', 'for'];
  const offset = partitioned ? 1 : 0;
  ctx.print(formatTable(partitioned ? ['stream', ...headers] : headers, rows, new Set([5 + offset, 7 + offset])));
  const waiting = blocked.reduce((sum, b) => sum + b.waiting, 0);
  const oldest = Math.min(...blocked.map((b) => (b.since > 0 ? b.since : now)));
  const count = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;
  ctx.print(
    `blocked ${count(blocked.length, 'key', 'keys')}; ${count(waiting, 'entry', 'entries')} held; oldest blocked for ${formatDuration(now - oldest)}`,
  );
}
