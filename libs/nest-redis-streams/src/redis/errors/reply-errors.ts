/** The stream key or its group is gone (stream deleted, FLUSHALL, Redis restarted without data). */
export function isNoGroupError(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith('NOGROUP');
}

/** XGROUP CREATE on a group that exists: the desired state, not a failure. */
export function isBusyGroupError(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith('BUSYGROUP');
}

/** The connection was closed on purpose (shutdown interrupting a blocking read). */
export function isConnectionClosedError(err: unknown): boolean {
  return err instanceof Error && /Connection is closed|Connection manually closed/i.test(err.message);
}
