import { waitForSignal } from '../consumer/index.js';

/**
 * A shutdown must end even when Redis never answers (a node that died in a failover, with
 * `maxRetriesPerRequest: null` a command waits for it for ever). Waits for `graceful` up to
 * `limitMs`: settled by then, resolves or rejects like it and returns true. Past it, `giveUp`
 * drops every connection, which fails whatever still waits on Redis, and the shutdown gets
 * `graceMs` more before this returns false. Nothing is lost by giving up: entries not acked stay
 * pending and are delivered again.
 */
export async function settleWithin(
  graceful: Promise<void>,
  limitMs: number,
  graceMs: number,
  giveUp: () => void,
): Promise<boolean> {
  let finished = false;
  const settled = graceful.then(
    () => (finished = true),
    () => (finished = true),
  );
  await waitForSignal((resolve) => void settled.then(resolve), limitMs);
  if (finished) {
    await graceful;
    return true;
  }
  giveUp();
  await waitForSignal((resolve) => void settled.then(resolve), graceMs);
  return false;
}
