import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parse } from 'yaml';

// No Docker engine runs here: the Dockerfile and docker-compose.yml are checked against the
// repository instead (every path they copy exists, every stage they name is defined, the image
// runs as a non-root user and ships every package the demo imports).

const ROOT = join(__dirname, '../..');
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

interface Instruction {
  op: string;
  args: string;
}
interface Stage {
  name: string;
  from: string;
  steps: Instruction[];
}

/** Dockerfile instructions, continuation lines joined and comments dropped, grouped by stage. */
function stages(text: string): Stage[] {
  const lines = text.replace(/\\\n/g, ' ').split('\n');
  const found: Stage[] = [];
  for (const line of lines.map((l) => l.trim()).filter((l) => l && !l.startsWith('#'))) {
    const [, op, args] = /^(\w+)\s+(.*)$/.exec(line) ?? [];
    if (!op) throw new Error(`Dockerfile line not understood: ${line}`);
    if (op.toUpperCase() === 'FROM') {
      const [, from, name] = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args) ?? [];
      found.push({ name: name ?? String(found.length), from, steps: [] });
    } else found.at(-1)?.steps.push({ op: op.toUpperCase(), args });
  }
  return found;
}

/** A COPY's options, sources and destination. */
function copyOf(args: string): { from: string | null; sources: string[]; dest: string } {
  const words = args.split(/\s+/);
  const from = words.find((w) => w.startsWith('--from='))?.slice('--from='.length) ?? null;
  const paths = words.filter((w) => !w.startsWith('--'));
  return { from, sources: paths.slice(0, -1).map((p) => p.replace(/^\.\//, '').replace(/\/$/, '')), dest: paths.at(-1)! };
}

/** Bare package names the demo imports (static or dynamic), scope kept. */
function demoImports(dir = join(ROOT, 'apps/orders-demo/src')): Set<string> {
  const names = new Set<string>();
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) demoImports(path).forEach((n) => names.add(n));
    else if (path.endsWith('.ts') && !path.endsWith('.spec.ts'))
      for (const [, spec] of readFileSync(path, 'utf8').matchAll(/(?:from|import\()\s*'([^'.][^']*)'/g)) {
        if (spec.startsWith('node:')) continue;
        names.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]);
      }
  }
  return names;
}

describe('Dockerfile and docker-compose.yml of the demo (checked statically)', () => {
  const built = stages(read('Dockerfile'));
  const byName = new Map(built.map((s) => [s.name, s]));
  const runtime = built.at(-1)!;

  it('is multi-stage, and the image it ends with runs as a non-root user the exec-form CMD of the compiled demo', () => {
    expect(built.length).toBeGreaterThanOrEqual(2);
    const users = runtime.steps.filter((s) => s.op === 'USER').map((s) => s.args);
    expect(users.length).toBeGreaterThan(0);
    expect(['root', '0']).not.toContain(users.at(-1)!.split(':')[0]);
    const cmd = JSON.parse(runtime.steps.find((s) => s.op === 'CMD')!.args) as string[];
    const app = parse(read('apps/orders-demo/tsconfig.app.json')) as { compilerOptions: { outDir: string } };
    const outDir = relative(ROOT, join(ROOT, 'apps/orders-demo', app.compilerOptions.outDir));
    expect(cmd).toEqual(['node', `${outDir}/main.js`]);
    expect(existsSync(join(ROOT, 'apps/orders-demo/src/main.ts'))).toBe(true);
  });

  it('copies from the build context only paths that exist and .dockerignore keeps, and from stages only what they made', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    const app = parse(read('apps/orders-demo/tsconfig.app.json')) as { compilerOptions: { outDir: string } };
    // What RUN steps make: npm's node_modules, the library build and the demo build.
    const made = [
      'node_modules',
      'libs/nest-redis-streams/dist',
      relative(ROOT, join(ROOT, 'apps/orders-demo', app.compilerOptions.outDir)),
    ];
    built.forEach((stage, index) => {
      for (const step of stage.steps.filter((s) => s.op === 'COPY')) {
        const { from, sources } = copyOf(step.args);
        for (const source of sources) {
          if (from === null) {
            expect({ source, exists: existsSync(join(ROOT, source)) }).toEqual({ source, exists: true });
            expect({ source, ignored: ignored.some((p) => p === source || p === source.split('/')[0]) }).toEqual({
              source,
              ignored: false,
            });
            continue;
          }
          const origin = byName.get(from);
          expect({ from, defined: origin !== undefined && built.indexOf(origin) < index }).toEqual({ from, defined: true });
          const path = source.replace(/^\/app\//, '');
          const copiedThere = origin!.steps
            .filter((s) => s.op === 'COPY')
            .flatMap((s) => copyOf(s.args).sources)
            .some((p) => path === p || path.startsWith(`${p}/`) || (p.endsWith('.json') && path === p));
          expect({ from, path, available: copiedThere || made.includes(path) }).toEqual({ from, path, available: true });
        }
      }
    });
  });

  it('installs every package the demo imports: production dependencies plus those it names from the lock file', () => {
    const pkg = JSON.parse(read('package.json')) as { dependencies: Record<string, string> };
    const lock = JSON.parse(read('package-lock.json')) as { packages: Record<string, { version: string }> };
    const text = read('Dockerfile');
    const named = [...(/\[([^\]]+)\]\.map\(\(n\) => n \+ '@'/.exec(text)?.[1] ?? '').matchAll(/'([^']+)'/g)].map((m) => m[1]);
    expect(text).toContain('npm ci --omit=dev');
    for (const name of named)
      expect({ name, locked: lock.packages[`node_modules/${name}`] !== undefined }).toEqual({ name, locked: true });
    const shipped = new Set([...Object.keys(pkg.dependencies), ...named, 'nest-redis-streams']);
    expect([...demoImports()].filter((n) => !shipped.has(n))).toEqual([]);
  });

  it('docker-compose builds the demo from this Dockerfile (no source mount, no npm at start) against its Redis', () => {
    const compose = parse(read('docker-compose.yml')) as {
      services: Record<
        string,
        {
          build?: { context: string; dockerfile: string; target?: string };
          volumes?: string[];
          command?: unknown;
          environment?: Record<string, string>;
        }
      >;
    };
    const demo = compose.services['orders-demo'];
    expect(demo.build).toMatchObject({ context: '.', dockerfile: 'Dockerfile' });
    expect(existsSync(join(ROOT, demo.build!.context, demo.build!.dockerfile))).toBe(true);
    if (demo.build!.target) expect(byName.has(demo.build!.target)).toBe(true);
    expect(demo.volumes ?? []).toEqual([]);
    expect(demo.command).toBeUndefined();
    expect(demo.environment?.REDIS_URL).toBe('redis://redis:6379');
    expect(compose.services.redis).toBeDefined();
  });
});
