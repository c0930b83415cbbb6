import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CONSOLE_STYLE } from './console-style.js';

/** Files the page may load: the compiled browser modules and the style sheet, by name only. */
const ASSET_NAME = /^[a-z][a-z0-9-]*\.(js|css)$/;

const TYPES: Record<string, string> = { js: 'text/javascript; charset=utf-8', css: 'text/css; charset=utf-8' };

/**
 * Where the browser modules are: `web/` beside this file in the ESM build. The CommonJS build
 * (dist/cjs) and the TypeScript sources (tests) use the ESM build's copy, since browsers load
 * ES modules only.
 */
function webDirectory(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [
    join(here, 'web'),
    join(here.replace(/([\\/])dist[\\/]cjs([\\/])/, '$1dist$2'), 'web'),
    join(here.replace(/([\\/])src([\\/])console$/, '$1dist$2console'), 'web'),
  ];
  return (
    candidates.find(
      (dir) => existsSync(join(dir, 'app.js')) && !readFileSync(join(dir, 'app.js'), 'utf8').includes('require('),
    ) ?? candidates[0]
  );
}

/** Serves the page's assets from memory once read: nothing is fetched from anywhere else. */
export class ConsoleAssets {
  private readonly cache = new Map<string, Buffer>();
  private dir: string | null = null;

  /** The file and its content type; null for a name that is not an asset. */
  read(file: string): { body: Buffer; type: string } | null {
    if (!ASSET_NAME.test(file)) return null;
    const type = TYPES[file.slice(file.lastIndexOf('.') + 1)];
    if (file === 'console.css') return { body: Buffer.from(CONSOLE_STYLE), type };
    let body = this.cache.get(file);
    if (!body) {
      this.dir ??= webDirectory();
      const path = join(this.dir, file);
      if (!existsSync(path)) return null;
      body = readFileSync(path);
      this.cache.set(file, body);
    }
    return { body, type };
  }
}

/** The page: one script and one style sheet by absolute path under `base`; no inline script or style. */
export function consolePage(base: string): string {
  const safe = base.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Redis Streams console</title>
<link rel="stylesheet" href="${safe}/assets/console.css">
<script type="module" src="${safe}/assets/app.js"></script>
</head>
<body>
<header><h1>Redis Streams console</h1><nav id="nav"></nav><span id="session"></span></header>
<div id="access"></div>
<div id="notice" role="status"></div>
<main id="main"><p>Loading…</p></main>
</body>
</html>
`;
}
