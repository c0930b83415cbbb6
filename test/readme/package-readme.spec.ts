import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readDocument, REPO_ROOT } from './documents.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { absoluteLinks } = require('../../scripts/lib/package-readme-links.cjs') as {
  absoluteLinks(readme: string, repositoryUrl: string): string;
};

// The npm package ships the README but not the guides: on the registry's page every link of the
// README must lead to the repository on GitHub, or stay inside the README itself.
describe("the package's README", () => {
  const { repository } = JSON.parse(readFileSync(join(REPO_ROOT, 'libs/nest-redis-streams/package.json'), 'utf8')) as {
    repository: { url: string };
  };
  const base = repository.url.replace(/^git\+/, '').replace(/\.git$/, '');
  const packaged = absoluteLinks(readDocument('README.md'), repository.url);
  const links = [...packaged.replace(/^```[\s\S]*?^```/gm, '').matchAll(/\]\(([^)\s]+)\)/g)].map(([, target]) => target);

  it('links only to absolute URLs and its own headings', () => {
    expect(links.length).toBeGreaterThan(10);
    expect(links.filter((link) => !/^(https?:|#|mailto:)/.test(link))).toEqual([]);
  });

  it('links each guide at its place in the repository', () => {
    expect(links).toContain(`${base}/blob/main/docs/handlers.md`);
    expect(links).toContain(`${base}/blob/main/docs/servers.md#typescript-note`);
  });
});
