#!/usr/bin/env node
// The `nest-redis-streams` command. It is a file of its own rather than dist/cli/main.js so that
// npm can link the command in a fresh clone of the repository, where dist/ does not exist yet when
// the links are made (the root's `prepare` script builds the library right after).
import('../dist/cli/main.js').catch((err) => {
  if (err && err.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes('dist/cli/main.js')) {
    console.error('nest-redis-streams: the library is not built (no dist/cli/main.js). In the repository, run `npm run build`.');
    process.exit(1);
  }
  throw err;
});
