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
        'The server owns the engine, not the other way round. Until the handler registry lands, the engine reads the ' +
        "server's StreamSubscription type (type-only); specs may drive the engine through the server's option resolution.",
      from: { path: '^libs/nest-redis-streams/src/consumer/', pathNot: '[.]spec[.]ts$' },
      to: {
        path: '^libs/nest-redis-streams/src/server/',
        pathNot: '^libs/nest-redis-streams/src/server/stream-subscription[.]ts$',
      },
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
