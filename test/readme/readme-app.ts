import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { documentFiles, readDocument, REPO_ROOT } from './documents.js';

export { REPO_ROOT };

/**
 * Code blocks of the README and the guides that make up a runnable app are marked with an HTML
 * comment (invisible on GitHub) on the line before the fence, naming the file the block is:
 * `<!-- snippet: hybrid/main.ts -->`. Markers, not headings or positions, so edits elsewhere in a
 * document, or a snippet moving between the README and a guide, cannot shift what is tested.
 */
const MARKED_BLOCK = /<!-- snippet: (\S+) -->\r?\n```[a-z]*\r?\n([\s\S]*?)\r?\n```/g;

/**
 * The marked snippets of the README and the guides in `docs/`, by file path, exactly as written
 * there. `documents` (file → text) replaces reading them from disk.
 */
export function readmeSnippets(
  documents: Map<string, string> = new Map(documentFiles().map((file) => [file, readDocument(file)])),
): Map<string, string> {
  const snippets = new Map<string, string>();
  const markedIn = new Map<string, string>();
  for (const [file, text] of documents) {
    for (const [, path, code] of text.matchAll(MARKED_BLOCK)) {
      if (snippets.has(path))
        throw new Error(
          `${markedIn.get(path)} and ${file} both mark a code block as "${path}"; give each snippet its own file name.`,
        );
      snippets.set(path, `${code}\n`);
      markedIn.set(path, file);
    }
  }
  return snippets;
}

/** The package's entry points besides its root, which snippets import by capability. */
const SUBPATH_ENTRY_POINTS = ['console', 'database'];

/**
 * `paths` for the subpath entry points the package's `exports` does not list yet, each to its
 * built types, so a snippet that imports `nest-redis-streams/console` type-checks as it will once
 * the package exports it. Empty when `exports` lists them all: then they resolve as for a user.
 */
function unexportedEntryPointPaths(): Record<string, string[]> {
  const { exports } = JSON.parse(readFileSync(join(REPO_ROOT, 'libs/nest-redis-streams/package.json'), 'utf8')) as {
    exports: Record<string, unknown>;
  };
  return Object.fromEntries(
    SUBPATH_ENTRY_POINTS.filter((name) => !(`./${name}` in exports)).map((name) => [
      `nest-redis-streams/${name}`,
      [`./node_modules/nest-redis-streams/dist/${name}/index.d.ts`],
    ]),
  );
}

/** A compiled app in a temporary directory; `remove()` deletes it. */
export interface BuiltApp {
  dir: string;
  /** The compiled JavaScript of a source file, e.g. `hybrid/main.ts` → `<dir>/out/hybrid/main.js`. */
  entry(path: string): string;
  remove(): void;
}

/**
 * Writes `files` (relative path → TypeScript) into a temporary ESM package and compiles it with
 * the repository's tsc, type-checking it as a user's project would. `nest-redis-streams` and Nest
 * resolve through a link to the repository's node_modules, so the library must be built first
 * (`tsc -p libs/nest-redis-streams/tsconfig.build.json`; `npm test` does it).
 */
export function buildApp(files: Map<string, string>): BuiltApp {
  const dir = mkdtempSync(join(tmpdir(), 'nrs-readme-'));
  const remove = () => rmSync(dir, { recursive: true, force: true });
  try {
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'readme-app', private: true, type: 'module' }));
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'es2022',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          experimentalDecorators: true,
          emitDecoratorMetadata: true,
          // The `nest new` default: README handlers must compile under it with nothing switched off.
          strict: true,
          skipLibCheck: true,
          types: ['node'],
          rootDir: 'src',
          outDir: 'out',
          paths: unexportedEntryPointPaths(),
        },
        include: ['src/**/*.ts'],
      }),
    );
    for (const [path, code] of files) {
      const file = join(dir, 'src', path);
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, code);
    }
    const tsc = spawnSync(process.execPath, [join(REPO_ROOT, 'node_modules/typescript/bin/tsc'), '-p', dir], {
      encoding: 'utf8',
    });
    if (tsc.status !== 0) throw new Error(`The README app in ${dir} does not compile:\n${tsc.stdout}${tsc.stderr}`);
  } catch (err) {
    remove();
    throw err;
  }
  return { dir, entry: (path) => join(dir, 'out', path.replace(/\.ts$/, '.js')), remove };
}
