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
  setupFiles: ['<rootDir>/test/helpers/quiet-logs.ts', '<rootDir>/test/helpers/no-xray-hook.ts'],
};

/**
 * The e2e files that also run on the template, each for what only the template decides. Together
 * they call every route and use every permission the whole e2e suite used on it when this list was
 * chosen (test/cloud/iam-exercised.json; the teardown checks both).
 */
const E2E_ON_THE_TEMPLATE = [
  'smoke', // every route of the template, through `fleetstream smoke` and its client
  'console-sessions', // the user pool's triggers and the session authorizer's bundle
  'console-live', // the console's WebSocket door and its authorizer, the live publishers' iot:Publish grants
  'device/mqtt', // the IoT authorizer, topic rules and their roles, live delivery through the data plane
  'forward/registry-stream', // the table stream's mapping, its filter and on-failure queue
  'forward/dlq-replay', // the forward queue's mapping to the forwarder, its retries, redrive policy and DLQ
  'firmware', // the firmware bucket, presigned URLs signed under the functions' roles
  'timeseries/export', // the export queue, its runs and the exports bucket's multipart uploads
  'timeseries/lifecycle', // the retention queue and its consumer
  'purging', // a purge's deletes and pack rewrites under the retention consumer's role, queued by the devices handler
  'rollouts', // the rollouts' reads and the sweep's releases under their roles
  'rollout-sweep', // the scheduled rule invoking the sweep's bundle
  'usage-shutdown', // the Extensions API and SIGTERM at a container's end
  'alarm-notifications', // the notifications queue's mapping to the notifier, its SES grant and the forward queue
];

export default {
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    {
      ...common,
      displayName: 'contract',
      testMatch: ['<rootDir>/test/contract/**/*.test.ts'],
      // Files that use the handlers' own table names get names of their own (test/helpers/e2e-tables.ts).
      setupFiles: [...common.setupFiles, '<rootDir>/test/helpers/e2e-tables.ts'],
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
    // The synthesized cloud assembly (test/helpers/runtime.ts): what the template changes (its
    // wiring, IAM, bundles and the Lambda runtime's behaviour), not what the sources already prove
    // on `e2e`. Its teardown fails a whole run in which a route of the template is never called or a
    // permission of test/cloud/iam-exercised.json is never used (docs/testing.md, "e2e-cloud").
    {
      ...common,
      displayName: 'e2e-cloud',
      testMatch: [
        '<rootDir>/test/cloud/**/*.test.ts', // faults of the template, Timestream's wiring, X-Ray
        ...E2E_ON_THE_TEMPLATE.map((file) => `<rootDir>/test/e2e/${file}.test.ts`),
      ],
      globals: { FLEETSTREAM_RUNTIME: 'cloud-assembly' },
      // Each file waits for the assembly its global setup synthesizes in the background.
      setupFiles: [...common.setupFiles, '<rootDir>/test/helpers/assembly-ready.ts'],
      globalSetup: '<rootDir>/test/helpers/cloud-assembly-setup.ts',
      globalTeardown: '<rootDir>/test/helpers/cloud-assembly-teardown.ts',
    },
    // Synthesized without CloudFormation Validate but for the stack as deployed (test/helpers/infra-synth.ts).
    {
      ...common,
      displayName: 'infra',
      testMatch: ['<rootDir>/test/infra/**/*.test.ts'],
      setupFiles: [...common.setupFiles, '<rootDir>/test/helpers/infra-synth.ts'],
    },
    // The console in Debian's Chromium against npm start (issue 12). Its global setup builds the
    // console; a missing Chromium fails the project (.ci/run installs it).
    {
      ...common,
      displayName: 'browser',
      testMatch: ['<rootDir>/test/browser/**/*.test.ts'],
      globalSetup: '<rootDir>/test/helpers/browser-setup.ts',
      globalTeardown: '<rootDir>/test/helpers/browser-teardown.ts',
    },
  ],
  testTimeout: 60_000,
  // Three files at once on two cores: the e2e projects' files spend part of their time waiting
  // (queues' windows, sweeps, a rollout's minute), when a third file uses the cores; every wait is
  // bounded for a loaded machine. Four were no faster, and put the load at 9 (docs/testing.md).
  maxWorkers: 3,
  // The longest files first, by test/durations.json where jest has no timing of its own (a clean clone).
  testSequencer: '<rootDir>/test/helpers/sequencer.js',
  // Each project's files, tests and times, printed last (.ci/run's log shows where the time goes).
  reporters: ['default', '<rootDir>/test/helpers/project-times-reporter.js'],
};
