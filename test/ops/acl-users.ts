import { readFileSync } from 'node:fs';

/**
 * The `ACL SETUSER` lines of README "Production kit", with their `<...-password>` placeholders
 * replaced: the tests run exactly what the README tells operators to run.
 */
export function readmeAclLines(passwords: Record<string, string>): string[][] {
  const readme = readFileSync('README.md', 'utf8');
  const section = readme.slice(readme.indexOf('### Production kit'));
  const block = /```(?:redis|text)?\n([\s\S]*?)```/.exec(section.slice(section.indexOf('ACL SETUSER') - 200))?.[1] ?? '';
  return block
    .split('\n')
    .filter((line) => line.startsWith('ACL SETUSER '))
    .map((line) => line.replace(/<(\w+)-password>/g, (_, user: string) => passwords[user] ?? `<${user}-password>`).split(/\s+/));
}
