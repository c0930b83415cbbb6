import { loadSession } from './api.js';
import { auditView } from './audit-view.js';
import { blockedKeysView } from './blocked-keys-view.js';
import { deadLettersView } from './dead-letters-view.js';
import { h, replace, route } from './dom.js';
import { entryView } from './entry-view.js';
import { groupView } from './group-view.js';
import { historyView } from './history-view.js';
import { notify } from './notice.js';
import { overviewView } from './overview-view.js';
import { scheduledView } from './scheduled-view.js';
import { streamSearchView } from './search-panel.js';

// The console page: hash routes (#overview, #group?stream=&group=, #dead-letters?stream=,
// #scheduled?stream=, #blocked?stream=&group=, #audit, #entry?stream=&id=, #search?stream=, #history?stream=&id=),
// each rendered from the JSON API. The overview refreshes itself every refreshMs while shown.

let timer: ReturnType<typeof setTimeout> | undefined;

async function render(): Promise<void> {
  clearTimeout(timer);
  const main = document.getElementById('main')!;
  const [view, query] = location.hash.slice(1).split('?');
  const params = new URLSearchParams(query ?? '');
  const session = await loadSession();
  const nav = document.getElementById('nav')!;
  replace(
    nav,
    ...[
      ['overview', 'Overview'],
      ['audit', 'Audit'],
    ].map(([v, label]) => h('a', { href: route(v), class: (view || 'overview') === v ? 'active' : undefined }, label)),
    session.grafanaUrl ? h('a', { href: session.grafanaUrl, 'data-test': 'grafana', rel: 'noopener' }, 'Grafana dashboard') : '',
  );
  replace(
    document.getElementById('session')!,
    session.writable
      ? `signed in as ${session.actor}`
      : h('span', { title: session.reason ?? '' }, `read-only for ${session.actor}`),
  );
  // Why there are no action buttons: the guard (or the options) would refuse them.
  replace(
    document.getElementById('access')!,
    session.writable ? '' : h('span', { 'data-test': 'read-only-reason' }, `Actions hidden: ${session.reason}`),
  );
  try {
    if (view === 'group') replace(main, await groupView(params, render));
    else if (view === 'dead-letters') replace(main, await deadLettersView(params, render));
    else if (view === 'scheduled') replace(main, await scheduledView(params, render));
    else if (view === 'blocked') replace(main, await blockedKeysView(params));
    else if (view === 'audit') replace(main, await auditView());
    else if (view === 'entry') replace(main, await entryView(params));
    else if (view === 'search') replace(main, streamSearchView(params));
    else if (view === 'history') replace(main, await historyView(params));
    else {
      replace(main, await overviewView());
      timer = setTimeout(() => void render(), session.refreshMs);
    }
  } catch (err) {
    notify(err instanceof Error ? err.message : String(err), true);
  }
}

window.addEventListener('hashchange', () => {
  notify('');
  void render();
});
void render();
