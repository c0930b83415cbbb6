import type { RedisConnectionOptions } from '../interfaces/connection-options.interface.js';
import { isClusterConnection } from './connection.factory.js';

/** Redis refused the command by ACL (a NOPERM reply, any server's wording). */
export function isPermissionError(err: unknown): boolean {
  return err instanceof Error && /\bNOPERM\b/.test(err.message);
}

/**
 * The `ACL SETUSER` line that grants what a NOPERM reply refused, or null for any other error.
 * Redis names the command (with its subcommand, `xinfo|stream`) but, before 7.2, not the user:
 * pass the user the connection logs in as (`aclUserOf`). The shapes, all recognised:
 * - 7.0: `NOPERM this user has no permissions to run the 'xadd' command`, `… to access one of
 *   the keys used as arguments`;
 * - 7.2+, Redis 8, Valkey: `NOPERM User app has no permissions to run the 'xadd' command`,
 *   `NOPERM No permissions to access a key` (capitalised), `… a channel`.
 */
export function aclFixFor(err: unknown, user: string): string | null {
  const message = err instanceof Error ? err.message : String(err);
  if (!/\bNOPERM\b/.test(message)) return null;
  const command = /no permissions to run the '([^']+)' command/i.exec(message)?.[1];
  if (command) return `ACL SETUSER ${user} +${command.toLowerCase()}`;
  if (/no permissions to access (?:one of the keys|a key|the '[^']*' key)/i.test(message)) {
    return `ACL SETUSER ${user} ~<keyPrefix>* ~{<keyPrefix>* (key patterns covering the streams, their dead-letter streams and trim-audit hashes)`;
  }
  if (/no permissions to access (?:one of the channels|a channel|the '[^']*' channel)/i.test(message)) {
    return `ACL SETUSER ${user} &<channel>`;
  }
  return null;
}

/** A NOPERM error's message with the ACL fix appended; other errors' messages unchanged. */
export function explainAclError(err: unknown, user: string): string {
  const message = err instanceof Error ? err.message : String(err);
  const fix = aclFixFor(err, user);
  return fix
    ? `${message}. Redis user "${user}" lacks this permission; grant it with \`${fix}\` (docs/production.md, "Production kit", lists what each role needs).`
    : message;
}

/**
 * Redis refused a command run inside a Lua script. 7.0 says `The user executing the script can't
 * run this command or subcommand` (without naming it); 7.2+, Redis 8 and Valkey say `ERR ACL
 * failure in script: User app has no permissions to run the 'xgroup|create' command` (a key or
 * channel refusal ends `No permissions to access a key`).
 */
export function isScriptPermissionError(err: unknown): boolean {
  const message = err instanceof Error ? err.message : String(err);
  return /user executing the script can't run this command|ACL failure in script/i.test(message);
}

/** The message for a refused script: what the script needed to do, its commands, and the ACL line granting them. */
export function scriptPermissionFix(err: unknown, user: string, purpose: string, commands: readonly string[]): string {
  const message = err instanceof Error ? err.message : String(err);
  return (
    `Redis refused a command of the script that tries to ${purpose} (${message}): Redis user "${user}" needs ` +
    `${commands.map((c) => c.toUpperCase().replace('|', ' ')).join(', ')}. Grant them with ` +
    `\`ACL SETUSER ${user} ${commands.map((c) => `+${c}`).join(' ')}\` (docs/production.md, "Production kit", lists what each role needs).`
  );
}

/** The same error with the ACL fix in its message when Redis refused a permission; others unchanged. */
export function withAclFix(err: unknown, user: string): unknown {
  if (!(err instanceof Error) || aclFixFor(err, user) === null) return err;
  err.message = explainAclError(err, user);
  return err;
}

/** The user a connection logs in as: the URL's or the options' username, else Redis' `default`. */
export function aclUserOf(connection: RedisConnectionOptions | undefined): string {
  if (connection === undefined) return 'default';
  if (typeof connection === 'string') {
    try {
      return decodeURIComponent(new URL(connection).username) || 'default';
    } catch {
      return 'default';
    }
  }
  if (isClusterConnection(connection)) return connection.clusterOptions?.redisOptions?.username ?? 'default';
  return connection.username ?? 'default';
}
