import { readFileSync } from 'node:fs';
import { join } from 'node:path';

// The README's install section: its tsconfig block must be what the package test's fixture apps
// compile with (scripts/package-check.mjs runs the section's install lines in them), so a user who
// copies it gets an app the package test has proven.
const root = join(__dirname, '../..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');

function blockAfter(marker: string, lang: string): string {
  const at = readme.indexOf(marker);
  if (at < 0) throw new Error(`README.md has no ${marker}`);
  const block = new RegExp('```' + lang + '\\n([\\s\\S]*?)\\n```').exec(readme.slice(at));
  if (!block) throw new Error(`README.md: no ${lang} block after ${marker}`);
  return block[1];
}

describe("the README's install section", () => {
  it.each(['nest12-esm', 'nest11-cjs'])('has the install line the package test runs in the %s fixture', (fixture) => {
    const line = blockAfter(`<!-- install: ${fixture} -->`, 'bash');
    expect(line).toMatch(/^npm install nest-redis-streams /);
    const fixtureDeps = Object.keys(
      JSON.parse(readFileSync(join(root, 'test/package', fixture, 'package.json'), 'utf8')).dependencies,
    );
    // The fixture holds only what `nest new` gives an app: the peers come from the README's line.
    for (const peer of ['@nestjs/microservices', '@nestjs/schedule', '@nestjs/terminus', 'ioredis']) {
      expect(line).toContain(peer);
      expect(fixtureDeps).not.toContain(peer);
    }
  });

  it.each(['nest12-esm', 'nest11-cjs'])('asks only for compiler options the %s fixture compiles with', (fixture) => {
    const required = JSON.parse(blockAfter('<!-- tsconfig: required -->', 'json')).compilerOptions as Record<string, unknown>;
    const used = JSON.parse(readFileSync(join(root, 'test/package', fixture, 'tsconfig.json'), 'utf8')).compilerOptions;
    for (const [option, value] of Object.entries(required)) expect([option, used[option]]).toEqual([option, value]);
  });
});
