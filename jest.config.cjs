// Nest 12 and some of its dependencies ship ESM only; Jest on Node 20 loads them through
// @swc/jest, so node_modules must not be ignored wholesale by the transformer.
const swc = [
  '@swc/jest',
  {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
    },
    module: { type: 'commonjs' },
  },
];
const shared = {
  transform: { '^.+\\.(t|j|mj|cj)s$': swc },
  transformIgnorePatterns: [
    '/node_modules/(?!(@electric-sql|@nestjs|uid|load-esm|file-type|strtok3|token-types|@tokenizer|iterare)/)',
  ],
  moduleNameMapper: {
    '^nest-redis-streams$': '<rootDir>/libs/nest-redis-streams/src/index.ts',
    '^nest-redis-streams/(console|database)$': '<rootDir>/libs/nest-redis-streams/src/$1/index.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  testEnvironment: 'node',
};
module.exports = {
  projects: [
    { ...shared, displayName: 'unit', testMatch: ['<rootDir>/libs/**/*.spec.ts'] },
    {
      ...shared,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/**/*.spec.ts'],
      testPathIgnorePatterns: ['/test/chaos/'],
      globalSetup: '<rootDir>/test/support/global-setup.cjs',
      globalTeardown: '<rootDir>/test/support/global-teardown.cjs',
      setupFilesAfterEnv: ['<rootDir>/test/support/hook-timeout.cjs'],
    },
    {
      ...shared,
      displayName: 'chaos',
      testMatch: ['<rootDir>/test/chaos/**/*.spec.ts'],
      globalSetup: '<rootDir>/test/chaos/support/global-setup.cjs',
      globalTeardown: '<rootDir>/test/chaos/support/global-teardown.cjs',
      setupFilesAfterEnv: ['<rootDir>/test/support/hook-timeout.cjs'],
    },
  ],
};
