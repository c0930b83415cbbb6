import { existsSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { documentFiles, readDocument, REPO_ROOT } from './documents.js';

// The README is the front door and the guides hold the rest: a link that leads nowhere, or to a
// heading that moved, loses the reader at the step they were looking for. GitHub renders these
// files, so anchors are GitHub's heading slugs.

/** The text a reader sees as prose: fenced blocks and code spans hold no links. */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function headingSlug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M}_\- ]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a Markdown file's headings, repeated ones numbered as GitHub numbers them. */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const [, text] of markdown.replace(/^```[\s\S]*?^```/gm, '').matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = headingSlug(text.replace(/`/g, ''));
    const count = seen.get(slug) ?? 0;
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
    seen.set(slug, count + 1);
  }
  return anchors;
}

/** The relative links of a document (images too), as written. */
function relativeLinks(markdown: string): string[] {
  return [...prose(markdown).matchAll(/!?\[[^\]]*\]\(([^)\s]+)\)/g)]
    .map(([, target]) => target)
    .filter((target) => !/^(https?:|mailto:)/.test(target));
}

const DOCUMENTS = [...documentFiles(), 'BENCHMARKS.md'];

describe('links between the README and the guides', () => {
  it.each(DOCUMENTS)('every relative link of %s reaches a file, and a heading when it names one', (file) => {
    const broken: string[] = [];
    for (const link of relativeLinks(readDocument(file))) {
      const [path, anchor] = link.split('#') as [string, string | undefined];
      const target = path === '' ? file : normalize(join(dirname(file), decodeURIComponent(path)));
      const absolute = join(REPO_ROOT, target);
      if (relative(REPO_ROOT, absolute).startsWith('..') || !existsSync(absolute)) {
        broken.push(`${link}: no file ${target}`);
        continue;
      }
      if (anchor === undefined) continue;
      if (!target.endsWith('.md') || statSync(absolute).isDirectory()) {
        broken.push(`${link}: an anchor into ${target}, which has no headings`);
        continue;
      }
      if (!headingAnchors(readDocument(target)).has(anchor)) broken.push(`${link}: ${target} has no heading #${anchor}`);
    }
    expect(broken).toEqual([]);
  });

  it('the README links every guide in docs/', () => {
    const readme = readDocument('README.md');
    const linked = new Set(relativeLinks(readme).map((link) => normalize(link.split('#')[0])));
    const guides = documentFiles().filter((file) => file.startsWith('docs/'));
    expect(guides.length).toBeGreaterThan(5);
    expect(guides.filter((guide) => !linked.has(guide))).toEqual([]);
  });

  it('slugs headings as GitHub does', () => {
    expect(headingSlug('Direct handlers (opt-in)')).toBe('direct-handlers-opt-in');
    expect(headingSlug('Bulk producers: emitBatch')).toBe('bulk-producers-emitbatch');
    expect(headingSlug("The operators' table")).toBe('the-operators-table');
    expect([...headingAnchors('# A\n\n```\n# not a heading\n```\n## A\n## `b` c')]).toEqual(['a', 'a-1', 'b-c']);
  });
});
