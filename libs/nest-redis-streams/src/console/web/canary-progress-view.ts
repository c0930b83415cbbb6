import type { CanaryProgress } from '../../operations/canary-redrive.js';
import { get } from './api.js';
import { h, replace } from './dom.js';

const POLL_MS = 1_000;

/**
 * The progress of a canary re-drive run (started here or by the CLI: the state is in Redis),
 * refreshed every second while it runs and the panel is on the page.
 */
export function canaryPanel(runId: string): HTMLElement {
  const body = h('div', {});
  const panel = h(
    'section',
    { class: 'card', 'data-test': 'canary' },
    h('h2', {}, 'Canary re-drive', h('small', {}, runId)),
    body,
  );
  const refresh = async () => {
    try {
      const p = await get<CanaryProgress>('dead-letters/canary', { run: runId });
      replace(
        body,
        h(
          'p',
          { 'data-test': 'canary-state' },
          `${p.state} (${p.phase === 'canary' ? `canary phase, ${p.options.canary} first` : 'rate-limited phase'})`,
        ),
        h(
          'p',
          { 'data-test': 'canary-counts' },
          `${p.redriven} re-driven, ${p.succeeded} succeeded, ${p.failedAgain} failed again, ${p.watching} watching. ` +
            `Limits: ${p.options.ratePerSec}/s, stop above ${p.options.maxFailureRatio} failed again, ${p.options.settleMs} ms to settle.`,
        ),
        h(
          'p',
          { 'data-test': 'canary-bound' },
          `Reads the dead letters up to ${p.upTo ?? '(none)'}, those there when it began` +
            (p.resumes ? `; took over run ${p.resumes}.` : '.'),
        ),
        p.reason ? h('p', { 'data-test': 'canary-reason', class: p.state === 'done' ? undefined : 'loss' }, p.reason) : '',
      );
      if (p.state === 'running') setTimeout(() => panel.isConnected && void refresh(), POLL_MS);
    } catch (err) {
      replace(body, h('p', { class: 'loss' }, err instanceof Error ? err.message : String(err)));
    }
  };
  void refresh();
  return panel;
}
