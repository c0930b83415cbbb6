import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

// The README promises Node.js ≥ its stated floor. Every package `npm ci` installs must accept that
// version, or the first thing a user on the floor sees is npm's EBADENGINE warnings (dev
// dependencies asked for Node 22 once; the repository now pins ones that do not).
// semver ships no types of its own; these two calls are all this check needs.
const semver = require('semver') as {
  validRange(range: string): string | null;
  satisfies(version: string, range: string): boolean;
};
const root = join(__dirname, '../..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');

function installedManifests(dir: string, found: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (name.startsWith('.')) continue;
    if (name.startsWith('@')) {
      installedManifests(join(dir, name), found);
      continue;
    }
    const pkg = join(dir, name);
    found.push(join(pkg, 'package.json'));
    try {
      installedManifests(join(pkg, 'node_modules'), found);
    } catch {
      // no nested node_modules
    }
  }
  return found;
}

describe('the Node.js floor the README states', () => {
  const floor = /Node\.js ≥ (\d+\.\d+)/.exec(readme)?.[1];

  it('is stated in the quick start', () => {
    expect(floor).toBeDefined();
  });

  it('is accepted by every installed package and by the packages of this repository', () => {
    const version = `${floor}.0`;
    const refused: string[] = [];
    const manifests = [join(root, 'package.json'), join(root, 'libs/nest-redis-streams/package.json')];
    for (const file of [...manifests, ...installedManifests(join(root, 'node_modules'))]) {
      let manifest: { name?: string; version?: string; engines?: { node?: string } };
      try {
        manifest = JSON.parse(readFileSync(file, 'utf8'));
      } catch {
        continue; // a folder without a manifest (a bin link, a scope's stray file)
      }
      const wanted = manifest.engines?.node;
      if (wanted && semver.validRange(wanted) && !semver.satisfies(version, wanted)) {
        refused.push(`${manifest.name}@${manifest.version} wants node ${wanted}`);
      }
    }
    expect(refused).toEqual([]);
  });
});
