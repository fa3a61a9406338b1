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
    { ...common, displayName: 'contract', testMatch: ['<rootDir>/test/contract/**/*.test.ts'],
      globalSetup: '<rootDir>/test/helpers/engines-setup.ts', globalTeardown: '<rootDir>/test/helpers/engines-teardown.ts' },
    { ...common, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.test.ts'] },
    // Issue 8's fuzz suite: the CI budget under `npm test`, a larger one with `npm run fuzz`.
    { ...common, displayName: 'fuzz', testMatch: ['<rootDir>/test/fuzz/**/*.test.ts'] },
    { ...common, displayName: 'infra', testMatch: ['<rootDir>/test/infra/**/*.test.ts'] },
  ],
  testTimeout: 60_000,
};
