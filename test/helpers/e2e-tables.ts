import { randomBytes } from 'node:crypto';

// A setup file of the e2e and contract projects, run before each test file's first import: the
// files share the run's DynamoDB Local (test/helpers/e2e-setup.ts, engines-setup.ts), so the tables
// a file's handlers and runtimes use get this file's own names (two contract files that both made
// the default table at once failed with "Cannot create preexisting table"). Set here rather than when a runtime starts, because the handlers read them once, when
// lambdas/shared/env.ts loads, and a test may import a handler module before it starts a runtime.
const suffix = randomBytes(4).toString('hex');
process.env.REGISTRY_TABLE = `fleetstream-registry-${suffix}`;
process.env.TIMESERIES_TABLE = `fleetstream-timeseries-${suffix}`;
