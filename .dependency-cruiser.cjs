// The library's import shape, checked by `npm test` (scripts/check-shape.mjs). Imports point one
// way: the server owns its collaborators, collaborators depend on small interfaces, and the
// areas below the server (recovery, context, events, codec) never import it back. Type-only
// imports count too: one later value import would make a type cycle real.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A cycle, even of types only, is one value import away from an initialisation-order bug.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'recovery-does-not-import-server',
      severity: 'error',
      comment: 'Recovery declares what it needs of a consumer (recovery-target.interface.ts); the consumer implements it.',
      from: { path: '^libs/nest-redis-streams/src/recovery/' },
      to: { path: '^libs/nest-redis-streams/src/server/' },
    },
    {
      name: 'leaf-areas-do-not-import-server-or-recovery',
      severity: 'error',
      comment: 'Context, events, codec, errors and interfaces are leaves that the server and recovery build on.',
      from: { path: '^libs/nest-redis-streams/src/(context|events|codec|errors|interfaces)/' },
      to: { path: '^libs/nest-redis-streams/src/(server|recovery|health|metrics|client|module)/' },
    },
    {
      name: 'no-folder-cycles',
      severity: 'error',
      scope: 'folder',
      comment:
        'Folders import one way too: a cycle between two folders (client <-> server once) is a tangle the file rule does not see.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'client-does-not-import-server',
      severity: 'error',
      comment: 'The client and the server share key names (keys/) and the codec, never each other.',
      from: { path: '^libs/nest-redis-streams/src/client/' },
      to: { path: '^libs/nest-redis-streams/src/server/' },
    },
    {
      name: 'redis-does-not-import-trim',
      severity: 'error',
      comment: 'redis/ is the Redis toolkit every area builds on; retention (trim/) is one of those areas.',
      from: { path: '^libs/nest-redis-streams/src/redis/' },
      to: { path: '^libs/nest-redis-streams/src/trim/' },
    },
    {
      name: 'keys-is-a-leaf',
      severity: 'error',
      comment:
        'Key and stream names are pure functions of their inputs that every area may use, so they import nothing of the library.',
      from: { path: '^libs/nest-redis-streams/src/keys/' },
      to: { path: '^libs/nest-redis-streams/src/', pathNot: '^libs/nest-redis-streams/src/keys/' },
    },
    {
      name: 'consumer-internals-only-through-its-index',
      severity: 'error',
      comment:
        'The consumer engine is one unit: the server wires it, health and metrics read its view, all through consumer/index.ts.',
      from: { path: '^libs/nest-redis-streams/src/', pathNot: '^libs/nest-redis-streams/src/consumer/' },
      to: { path: '^libs/nest-redis-streams/src/consumer/', pathNot: '^libs/nest-redis-streams/src/consumer/index[.]ts$' },
    },
    {
      name: 'consumer-does-not-import-server',
      severity: 'error',
      comment:
        "The server owns the engine, not the other way round: what to consume (StreamSubscription) is the engine's own type.",
      from: { path: '^libs/nest-redis-streams/src/consumer/' },
      to: { path: '^libs/nest-redis-streams/src/server/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // TypeScript 7 has no compiler API yet; swc (already a dev dependency) parses the sources.
    parser: 'swc',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
