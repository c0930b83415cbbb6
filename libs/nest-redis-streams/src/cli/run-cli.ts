import { OperationError } from '../operations/errors/operation.error.js';
import { parse } from './cli-args.js';
import { aclFixFor, aclUserOf, explainAclError } from '../redis/acl-hint.js';
import { redactUrls } from '../redis/redact-url.js';
import { connectionFrom, openContext } from './cli-context.js';
import { BIN, EXIT } from './cli.constants.js';
import type { Command } from './command.interface.js';
import { blockedCommand } from './commands/blocked.command.js';
import { consumersCommand } from './commands/consumers.command.js';
import { dlqCommand } from './commands/dlq.command.js';
import { doctorCommand } from './commands/doctor.command.js';
import { outboxCommand } from './commands/outbox.command.js';
import { ownershipCommand } from './commands/ownership.command.js';
import { pendingCommand } from './commands/pending.command.js';
import { reconcileCommand } from './commands/reconcile.command.js';
import { scheduledCommand } from './commands/scheduled.command.js';
import { searchCommand } from './commands/search.command.js';
import { setidCommand } from './commands/setid.command.js';
import { statusCommand } from './commands/status.command.js';
import { trimCommand } from './commands/trim.command.js';
import { escapeControls, STD_OUTPUT } from './output.js';
import { UsageError } from './errors/usage.error.js';

export const COMMANDS: Command[] = [
  statusCommand,
  pendingCommand,
  dlqCommand,
  scheduledCommand,
  blockedCommand,
  searchCommand,
  setidCommand,
  consumersCommand,
  ownershipCommand,
  trimCommand,
  reconcileCommand,
  doctorCommand,
  outboxCommand,
];

function overviewHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    `Usage: ${BIN} <command> [arguments] [--url redis://host:6379] [--json]`,
    '',
    'Operate Redis Streams consumer groups run by nest-redis-streams: see what is stuck and act on it,\nand check that every outbox event had its effect (reconcile).',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    `Run "${BIN} <command> --help" for a command's arguments and options.`,
    'Exit codes: 0 ok, 1 a limit exceeded (status, ownership) or events not reconciled, 2 bad arguments, 3 refused (by the ACL too) or not found, 4 Redis (or PostgreSQL) failed.',
  ].join('\n');
}

/**
 * Runs one command line and resolves with its exit code; never throws for bad input (the message
 * goes to stderr). Writes go through `StreamOperations`, so each one is in the audit stream.
 */
export async function runCli(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined) {
    // A cron line that lost its arguments must not pass as a successful check.
    STD_OUTPUT.warn(`${overviewHelp()}\n\nNo command given: name one of ${COMMANDS.map((c) => c.name).join(', ')}.`);
    return EXIT.usage;
  }
  if (name === 'help' || name === '--help' || name === '-h') {
    const command = COMMANDS.find((c) => c.name === rest[0]);
    STD_OUTPUT.print(command ? command.help : overviewHelp());
    return EXIT.ok;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) {
    STD_OUTPUT.warn(
      `Unknown command "${escapeControls(name)}". Commands: ${COMMANDS.map((c) => c.name).join(', ')}. Run "${BIN} --help".`,
    );
    return EXIT.usage;
  }
  let ctx: Awaited<ReturnType<typeof openContext>> | undefined;
  let user = 'default';
  try {
    const parsed = parse(command.name, rest, command.options);
    if (parsed.values.help) {
      STD_OUTPUT.print(command.help);
      return EXIT.ok;
    }
    const options = command.prepare(parsed, env);
    user = aclUserOf(connectionFrom(parsed, env));
    ctx = await openContext(parsed, env, options, command.needsRedis !== false);
    return await command.run(ctx, parsed);
  } catch (err) {
    // The ACL refused a command: refused (3), with the grant that fixes it.
    if (aclFixFor(err, user) !== null) {
      STD_OUTPUT.warn(escapeControls(explainAclError(err, user)));
      return EXIT.refused;
    }
    // One line: a name inside the message cannot start a line of its own. No password either,
    // whatever quoted a URL (ioredis, node-postgres, a command's own message).
    STD_OUTPUT.warn(escapeControls(redactUrls(err instanceof Error ? err.message : String(err))));
    if (err instanceof UsageError) return EXIT.usage;
    if (err instanceof OperationError) return err.kind === 'bad-request' ? EXIT.usage : EXIT.refused;
    return EXIT.error;
  } finally {
    ctx?.redis.disconnect();
  }
}
