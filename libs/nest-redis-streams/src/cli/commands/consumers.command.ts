import { checkHandOver } from '../../operations/consumers.js';
import { formatDuration } from '../../health/stats-table.js';
import { positionals, stringOption } from '../cli-args.js';
import { EXIT } from '../cli.constants.js';
import { COMMON_HELP, type Command } from '../command.interface.js';
import { escapeControls, printable } from '../output.js';
import { formatTable } from '../table.js';
import { UsageError } from '../errors/usage.error.js';

/** What the state column was judged by (see `LivenessSource`). */
const LIVENESS = {
  heartbeat: 'heartbeat',
  server: 'server idle',
  idle: 'idle (Redis < 7.2)',
} as const;

/** `consumers`: a group's consumers, and deleting an idle one without losing what it holds. */
export const consumersCommand: Command = {
  name: 'consumers',
  summary: "a group's consumers (pending, idle, what they hold); delete an idle one",
  help: `Usage: nest-redis-streams consumers <stream> <group> [--delete <consumer> [--hand-over-to <consumer>]]

Lists the group's consumers: pending entries, idle time, active or not, the first ids held.
"judged by" says how: "heartbeat" (every instance beats on its reclaim round, even on a quiet
stream; ownership: 'exclusive' also renews a lease), else "server idle" (Redis 7.2+ counts every
read attempt), else "idle (Redis < 7.2)" (only reads that returned entries count: a consumer of a
quiet stream shows "quiet or gone").
  --delete <name>          delete this consumer; refused while it holds pending entries or its
                           heartbeat is live (stop its instance first)
  --hand-over-to <name>    first move the entries it holds to this consumer (delivery counts kept)

${COMMON_HELP}

Exit codes: 0 done, 2 bad arguments, 3 refused (it holds entries, or is alive) or no such consumer/group.
Example: nest-redis-streams consumers orders payments --delete pod-3 --hand-over-to pod-7`,
  options: {
    delete: { type: 'string' },
    'hand-over-to': { type: 'string' },
  },
  prepare(parsed) {
    const [stream] = positionals('consumers', parsed, ['stream', 'group']);
    if (parsed.values['hand-over-to'] !== undefined && parsed.values.delete === undefined) {
      throw new UsageError(
        '--hand-over-to goes with --delete <consumer>: it says who receives the entries of the consumer being deleted.',
      );
    }
    const heir = stringOption(parsed, 'hand-over-to');
    if (heir !== undefined) checkHandOver(stringOption(parsed, 'delete') as string, heir);
    return { streams: [stream] };
  },
  async run(ctx, parsed) {
    const [stream, group] = parsed.positionals;
    const victim = stringOption(parsed, 'delete');
    if (victim !== undefined) {
      const heir = stringOption(parsed, 'hand-over-to');
      const moved = heir === undefined ? null : await ctx.ops.handOver(ctx.actor, stream, group, victim, heir);
      const result = await ctx.ops.deleteConsumer(ctx.actor, stream, group, victim);
      const tombstoned = moved?.tombstoned ?? [];
      if (ctx.json) ctx.printJson({ ...result, handedOver: moved?.moved ?? 0, tombstoned });
      else {
        // Entries trimmed away while pending are not moved: the hand-over wrote their tombstones.
        const lost = tombstoned.length > 0 ? `${tombstoned.length} trimmed away (payload-trimmed tombstones); ` : '';
        ctx.print(
          `${moved ? `handed ${moved.moved} entries to "${escapeControls(heir ?? '')}"; ${lost}` : ''}deleted consumer "${escapeControls(victim)}"`,
        );
      }
      return EXIT.ok;
    }
    const consumers = await ctx.ops.consumers(stream, group);
    if (ctx.json) {
      ctx.printJson(consumers);
      return EXIT.ok;
    }
    const rows = consumers.map((c) => [
      printable(c.name, 40),
      String(c.pending),
      formatDuration(c.idleMs),
      c.active ? 'active' : c.liveness === 'idle' ? 'quiet or gone' : 'idle',
      c.holds.join(' ') + (c.pending > c.holds.length ? ' …' : ''),
      LIVENESS[c.liveness],
    ]);
    ctx.print(formatTable(['consumer', 'pending', 'idle', 'state', 'holds', 'judged by'], rows, new Set([1, 2])));
    return EXIT.ok;
  },
};
