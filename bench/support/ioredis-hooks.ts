// Module resolve hook of a benchmark child, registered by ioredis-select.ts: every `ioredis`
// import in the process, the library's own included, resolves to another installed copy of
// ioredis (an npm alias such as `ioredis5`), so one run can measure the transport on two versions.
import type { InitializeHook, ResolveHook } from 'node:module';

let target = 'ioredis';

export const initialize: InitializeHook<{ target: string }> = (data) => {
  target = data.target;
};

export const resolve: ResolveHook = (specifier, context, nextResolve) => {
  if (specifier === 'ioredis' || specifier.startsWith('ioredis/')) {
    return nextResolve(target + specifier.slice('ioredis'.length), context);
  }
  return nextResolve(specifier, context);
};
