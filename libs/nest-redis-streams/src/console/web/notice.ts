import { replace } from './dom.js';

/** One line at the top of the page: what an action did, or why it failed. */
export function notify(text: string, error = false): void {
  const el = document.getElementById('notice');
  if (!el) return;
  el.className = error ? 'error' : '';
  replace(el, text);
}

/** Runs an action, reports its outcome, then refreshes the view. */
export async function act(what: string, run: () => Promise<unknown>, refresh: () => Promise<void>): Promise<void> {
  try {
    await run();
    notify(`${what}: done.`);
  } catch (err) {
    notify(`${what}: ${err instanceof Error ? err.message : String(err)}`, true);
  }
  await refresh();
}
