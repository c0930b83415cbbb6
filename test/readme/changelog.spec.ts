import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as rootEntry from 'nest-redis-streams';
import * as consoleEntry from 'nest-redis-streams/console';
import * as databaseEntry from 'nest-redis-streams/database';

// Every public change since the last release has a CHANGELOG line. public-surface.json is the
// surface as released (runtime exports per entry point, option names, metric names, envelope and
// dead-letter fields, dead-letter reasons); a name added or removed since, or moved to another
// entry point, must be named in the CHANGELOG's "Unreleased" section. At a release, bump the
// version, move the lines under it and record the surface again:
// NRS_WRITE_SURFACE=1 npx jest test/readme/changelog.spec.ts
const lib = join(__dirname, '../../libs/nest-redis-streams');
const surfaceFile = join(lib, 'public-surface.json');
const changelog = readFileSync(join(lib, 'CHANGELOG.md'), 'utf8');
const version: string = JSON.parse(readFileSync(join(lib, 'package.json'), 'utf8')).version;

// The package.json `exports` subpaths, each with what it exports at run time.
const ENTRY_POINTS: Record<string, object> = { '.': rootEntry, './console': consoleEntry, './database': databaseEntry };

type Surface = Record<string, string[]>;
/** The file's shape: `exports` per entry point, every other kind a flat list. */
type RecordedSurface = { exports: Surface } & Record<string, string[] | Surface>;

function currentSurface(): RecordedSurface {
  const all = Object.values(ENTRY_POINTS).flatMap((entry) => Object.entries(entry));
  const defaults = all.filter(([name, value]) => name.endsWith('_DEFAULTS') && typeof value === 'object');
  const metricNames = (definitions: object) => Object.values(definitions).map((d: { name: string }) => d.name);
  const sorted = (names: string[]) => [...new Set(names)].sort();
  return {
    exports: Object.fromEntries(Object.entries(ENTRY_POINTS).map(([path, entry]) => [path, sorted(Object.keys(entry))])),
    options: sorted(defaults.flatMap(([name, value]) => Object.keys(value as object).map((key) => `${name}.${key}`))),
    metrics: sorted([...metricNames(rootEntry.METRIC_DEFINITIONS), ...metricNames(databaseEntry.OUTBOX_METRIC_DEFINITIONS)]),
    envelopeFields: sorted(Object.values(rootEntry.ENVELOPE).map(String)),
    deadLetterFields: sorted(Object.values(rootEntry.DLQ_FIELDS).map(String)),
    deadLetterReasons: sorted(Object.values(rootEntry.DeadLetterReason).map(String)),
  };
}

/** One list per kind, the exports as one kind per entry point (`exports ./console`). */
function flat({ exports, ...kinds }: RecordedSurface): Surface {
  const perEntry = Object.entries(exports).map(([path, names]) => [`exports ${path}`, names]);
  return { ...(kinds as Surface), ...Object.fromEntries(perEntry) };
}

function section(heading: string): string {
  const start = changelog.indexOf(`\n${heading}\n`);
  if (start < 0) return '';
  const next = changelog.indexOf('\n## ', start + heading.length + 1);
  return changelog.slice(start, next < 0 ? undefined : next);
}

describe('CHANGELOG and the public surface', () => {
  const surface = currentSurface();
  if (process.env.NRS_WRITE_SURFACE === '1') writeFileSync(surfaceFile, `${JSON.stringify({ version, ...surface }, null, 2)}\n`);
  const { version: released, ...file } = JSON.parse(readFileSync(surfaceFile, 'utf8')) as RecordedSurface & { version: string };
  const current = flat(surface);
  const recorded = flat(file);

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
