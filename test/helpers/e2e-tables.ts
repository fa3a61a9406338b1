import { randomBytes } from 'node:crypto';

// A setup file of the e2e project, run before each test file's first import: the file's runtimes
// share the run's DynamoDB Local (test/helpers/e2e-setup.ts), so their tables get this file's own
// names. Set here rather than when a runtime starts, because the handlers read them once, when
// lambdas/shared/env.ts loads, and a test may import a handler module before it starts a runtime.
const suffix = randomBytes(4).toString('hex');
process.env.REGISTRY_TABLE = `fleetstream-registry-${suffix}`;
process.env.TIMESERIES_TABLE = `fleetstream-timeseries-${suffix}`;
