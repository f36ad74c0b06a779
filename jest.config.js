// Two projects: pure unit tests (no stack) and integration tests against a real ephemeral stack.
// Remembers module resolutions across the files a worker runs (see the module).
const resolver = '<rootDir>/test/support/cached-resolver.js';
const transform = {
  '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } } }],
};

/** @type {import('jest').Config} */
module.exports = {
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
  maxWorkers: 3,
  // A worker's heap grows with every file it runs (each file loads the app's modules anew, and
  // native add-ons such as the voice stack's keep theirs): past this after a file, the worker is
  // replaced by a fresh one rather than run out of memory in the middle of a later file.
  workerIdleMemoryLimit: '1536MB',
  // Integration tests drive real servers; a turn through Temporal takes more than jest's 5 s default on a busy box.
  testTimeout: 60000,
  projects: [
    {
      displayName: 'unit',
      testEnvironment: '<rootDir>/test/support/cost-environment.js',
      transform,
      resolver,
      testMatch: ['<rootDir>/test/unit/**/*.test.ts'],
    },
    {
      displayName: 'integration',
      testEnvironment: '<rootDir>/test/support/cost-environment.js',
      transform,
      resolver,
      // test/security holds one test per security boundary, each against the real stack.
      testMatch: ['<rootDir>/test/integration/**/*.test.ts', '<rootDir>/test/security/**/*.test.ts'],
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
    },
  ],
};
