import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const REPO_ROOT = join(__dirname, '../..');

/**
 * The documents a user reads, repository-relative: the README (the front door) and the guides in
 * `docs/` it links to. The generated API reference (`docs/api/`) is not among them: it is checked
 * against the sources instead (scripts/check-code.mjs).
 */
export function documentFiles(): string[] {
  const guides = readdirSync(join(REPO_ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', ...guides];
}

/** One document's text. */
export function readDocument(file: string): string {
  return readFileSync(join(REPO_ROOT, file), 'utf8');
}

/**
 * Every document's text, one after the other: for tests that check a table or a command line the
 * docs give (ACL users, the server table, the console options) wherever a guide now keeps it.
 */
export function readDocuments(): string {
  return documentFiles()
    .map((file) => readDocument(file))
    .join('\n\n');
}
