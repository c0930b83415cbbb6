import { createRequire } from 'node:module';
import { METRICS_MESSAGES } from './metrics.constants.js';

/** The prom-client module (an optional peer dependency). */
export type PromClient = typeof import('prom-client');

/**
 * Loads prom-client on first use, so that importing this library never requires it. prom-client
 * is CommonJS, so `require` returns the same instance (and global registry) as the
 * application's own `import 'prom-client'`.
 */
export function loadPromClient(load: (id: string) => unknown = createRequire(import.meta.url)): PromClient {
  try {
    return load('prom-client') as PromClient;
  } catch (err) {
    const missing = (err as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND' && /'prom-client'/.test((err as Error).message);
    if (missing) throw new Error(METRICS_MESSAGES.promClientMissing, { cause: err });
    throw err;
  }
}
