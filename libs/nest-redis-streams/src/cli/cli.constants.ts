/** Exit codes a cron job or CI gate can tell apart. */
export const EXIT = {
  ok: 0,
  /** A `status` limit (--max-lag, --max-pending...) was exceeded. */
  checkFailed: 1,
  /** Bad arguments: the message says which and how to fix them. */
  usage: 2,
  /** The action was refused (it would lose work), its target does not exist, or it changed meanwhile. */
  refused: 3,
  /** Redis could not be reached, or failed. */
  error: 4,
} as const;

export const BIN = 'nest-redis-streams';

/** The CLI's own figures. */
export const CLI_DEFAULTS = {
  /** Ids named in one line of output before "and N more". */
  namedIds: 10,
  /** How long the CLI waits for a PostgreSQL connection (`--database-url`). */
  databaseConnectTimeoutMs: 10_000,
};
