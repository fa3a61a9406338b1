// Jest runs the TypeScript sources as native ESM (middy 7 is ESM-only): swc strips types and
// keeps `import`, and `npm test` starts node with --experimental-vm-modules.
const transform = {
  '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2023' }, module: { type: 'es6' } }],
};
const common = {
  transform,
  extensionsToTreatAsEsm: ['.ts'],
  moduleFileExtensions: ['ts', 'js', 'json'],
  testEnvironment: 'node',
  setupFiles: ['<rootDir>/test/helpers/quiet-logs.ts'],
};

export default {
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    {
      ...common,
      displayName: 'contract',
      testMatch: ['<rootDir>/test/contract/**/*.test.ts'],
      globalSetup: '<rootDir>/test/helpers/engines-setup.ts',
      globalTeardown: '<rootDir>/test/helpers/engines-teardown.ts',
    },
    // One DynamoDB Local for the project's runtimes (each on tables of its own): test/helpers/e2e-setup.ts.
    {
      ...common,
      displayName: 'e2e',
      testMatch: ['<rootDir>/test/e2e/**/*.test.ts'],
      setupFiles: [...common.setupFiles, '<rootDir>/test/helpers/e2e-tables.ts'],
      globalSetup: '<rootDir>/test/helpers/e2e-setup.ts',
      globalTeardown: '<rootDir>/test/helpers/e2e-teardown.ts',
    },
    // Issue 8's fuzz suite: the CI budget under `npm test`, a larger one with `npm run fuzz`.
    { ...common, displayName: 'fuzz', testMatch: ['<rootDir>/test/fuzz/**/*.test.ts'] },
    // The same end-to-end files on the synthesized cloud assembly: its bundles, wiring and IAM
    // (test/helpers/runtime.ts). Synthesized once per run. The gateway's limits and npm start's own
    // behaviour (restarts, runtime files) are the same code in both modes and run once, above.
    {
      ...common,
      displayName: 'e2e-cloud',
      testMatch: ['<rootDir>/test/e2e/**/*.test.ts', '<rootDir>/test/cloud/**/*.test.ts'],
      globals: { FLEETSTREAM_RUNTIME: 'cloud-assembly' },
      // The data-path request test reads the runtime's in-process counters: the assembly runs its
      // functions in workers, whose requests the test's process does not see.
      testPathIgnorePatterns: ['/node_modules/', '/test/e2e/gateway-limits\\.test\\.ts$', '/test/e2e/local-runtime\\.test\\.ts$', '/test/e2e/data-path/'],
      globalSetup: '<rootDir>/test/helpers/cloud-assembly-setup.ts',
      globalTeardown: '<rootDir>/test/helpers/cloud-assembly-teardown.ts',
    },
    { ...common, displayName: 'infra', testMatch: ['<rootDir>/test/infra/**/*.test.ts'] },
    // The console in Debian's Chromium against npm start (issue 12). Its global setup builds the
    // console; a missing Chromium fails the project (.ci/run installs it).
    { ...common, displayName: 'browser', testMatch: ['<rootDir>/test/browser/**/*.test.ts'], globalSetup: '<rootDir>/test/helpers/browser-setup.ts' },
  ],
  testTimeout: 60_000,
  // Each project's files, tests and times, printed last (.ci/run's log shows where the time goes).
  reporters: ['default', '<rootDir>/test/helpers/project-times-reporter.js'],
};
