import { readDocuments } from '../readme/documents.js';

/**
 * The `ACL SETUSER` lines of the docs' "Production kit" (docs/production.md), with their
 * `<...-password>` placeholders replaced: the tests run exactly what the docs tell operators to run.
 */
export function readmeAclLines(passwords: Record<string, string>): string[][] {
  const docs = readDocuments();
  const section = docs.slice(docs.search(/^#+ Production kit$/m));
  const block = /```(?:redis|text)?\n([\s\S]*?)```/.exec(section.slice(section.indexOf('ACL SETUSER') - 200))?.[1] ?? '';
  return block
    .split('\n')
    .filter((line) => line.startsWith('ACL SETUSER '))
    .map((line) => line.replace(/<(\w+)-password>/g, (_, user: string) => passwords[user] ?? `<${user}-password>`).split(/\s+/));
}
