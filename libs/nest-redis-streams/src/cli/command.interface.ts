import type { CliContext } from './cli-context.js';
import type { OptionSpecs, Parsed } from './cli-args.js';
import type { StreamOperationsOptions } from '../operations/stream-operations-options.interface.js';

/** One CLI command: its help, its options, and what it does. */
export interface Command {
  name: string;
  /** One line for the command list. */
  summary: string;
  /** The full help text (usage, arguments, options, examples). */
  help: string;
  options: OptionSpecs;
  /** False for a command that reads only PostgreSQL: it runs while Redis is away. @default true */
  needsRedis?: boolean;
  /**
   * Checks every argument (and setting from `env`) before connecting, so that bad input is a
   * usage error (exit 2) whether Redis answers or not; returns the streams the command acts on.
   */
  prepare(parsed: Parsed, env: NodeJS.ProcessEnv): StreamOperationsOptions;
  /** Runs it; resolves with the exit code. */
  run(ctx: CliContext, parsed: Parsed): Promise<number>;
}

/** Options shown in every command's help. */
export const COMMON_HELP = `Connection and output:
  --url <url>                 Redis URL (default: $REDIS_URL, else redis://127.0.0.1:6379)
  --cluster                   --url is a comma-separated list of cluster seed nodes
  --dead-letter-stream <key>  dead-letter stream (default: <stream>:dlq, {<stream>}:dlq on a cluster)
  --json                      machine-readable output on stdout
  --actor <name>              who to record in the audit stream (default: cli:<user>@<host>)
  -h, --help                  this help`;
