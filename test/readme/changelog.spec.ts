import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as api from 'nest-redis-streams';

// Every public change since the last release has a CHANGELOG line. public-surface.json is the
// surface as released (runtime exports, option names, metric names, envelope and dead-letter
// fields, dead-letter reasons); a name added or removed since must be named in the CHANGELOG's
// "Unreleased" section. At a release, bump the version, move the lines under it and record the
// surface again: NRS_WRITE_SURFACE=1 npx jest test/readme/changelog.spec.ts
const lib = join(__dirname, '../../libs/nest-redis-streams');
const surfaceFile = join(lib, 'public-surface.json');
const changelog = readFileSync(join(lib, 'CHANGELOG.md'), 'utf8');
const version: string = JSON.parse(readFileSync(join(lib, 'package.json'), 'utf8')).version;

type Surface = Record<string, string[]>;

function currentSurface(): Surface {
  const defaults = Object.entries(api).filter(([name, value]) => name.endsWith('_DEFAULTS') && typeof value === 'object');
  const metricNames = (definitions: object) => Object.values(definitions).map((d: { name: string }) => d.name);
  return {
    exports: Object.keys(api),
    options: defaults.flatMap(([name, value]) => Object.keys(value as object).map((key) => `${name}.${key}`)),
    metrics: [...metricNames(api.METRIC_DEFINITIONS), ...metricNames(api.OUTBOX_METRIC_DEFINITIONS)],
    envelopeFields: Object.values(api.ENVELOPE).map(String),
    deadLetterFields: Object.values(api.DLQ_FIELDS).map(String),
    deadLetterReasons: Object.values(api.DeadLetterReason).map(String),
  };
}

const sorted = (surface: Surface): Surface =>
  Object.fromEntries(Object.entries(surface).map(([kind, names]) => [kind, [...new Set(names)].sort()]));

function section(heading: string): string {
  const start = changelog.indexOf(`\n${heading}\n`);
  if (start < 0) return '';
  const next = changelog.indexOf('\n## ', start + heading.length + 1);
  return changelog.slice(start, next < 0 ? undefined : next);
}

describe('CHANGELOG and the public surface', () => {
  const current = sorted(currentSurface());
  if (process.env.NRS_WRITE_SURFACE === '1') writeFileSync(surfaceFile, `${JSON.stringify({ version, ...current }, null, 2)}\n`);
  const { version: released, ...recorded } = JSON.parse(readFileSync(surfaceFile, 'utf8')) as Surface & { version: string };

  it('has a versioned entry for the package version, newest first after Unreleased', () => {
    const versions = [...changelog.matchAll(/^## (\d+\.\d+\.\d+)/gm)].map((m) => m[1]);
    expect(versions[0]).toBe(version);
    expect(released).toBe(version);
  });

  it('names in "Unreleased" every name added to or removed from the surface since the release', () => {
    const unreleased = section('## Unreleased');
    const unmentioned: string[] = [];
    for (const [kind, names] of Object.entries(current)) {
      const before = new Set(recorded[kind] ?? []);
      const now = new Set(names);
      const changed = [...names.filter((n) => !before.has(n)), ...[...before].filter((n) => !now.has(n))];
      // An option is named by its field (`maxHandlerMs`), not by the defaults object holding it.
      for (const name of changed) if (!unreleased.includes(name.split('.').pop()!)) unmentioned.push(`${kind}: ${name}`);
    }
    expect(unmentioned).toEqual([]);
  });
});
