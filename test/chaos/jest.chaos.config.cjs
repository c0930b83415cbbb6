// The chaos suite on its own: `node scripts/test.mjs --config test/chaos/jest.chaos.config.cjs`
// (test.mjs builds the library and the worker processes first). Same transform as the
// integration project; one scenario at a time, since they measure a 2-core machine under load.
const path = require('node:path');
const { projects } = require('../../jest.config.cjs');

const { displayName, testMatch, testPathIgnorePatterns, globalSetup, globalTeardown, ...shared } = projects.find(
  (p) => p.displayName === 'integration',
);

module.exports = {
  ...shared,
  rootDir: path.resolve(__dirname, '../..'),
  displayName: 'chaos',
  testMatch: ['<rootDir>/test/chaos/**/*.spec.ts'],
  globalSetup: '<rootDir>/test/chaos/support/global-setup.cjs',
  globalTeardown: '<rootDir>/test/chaos/support/global-teardown.cjs',
  maxWorkers: 1,
};
