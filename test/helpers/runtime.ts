export { cloudAssemblyDir, iamReportFile } from './runtime-kind';
import { startCloudAssemblyRuntime } from '../../local/cloud-assembly/runtime';
import { workerDynamoDbEndpoint } from './dynamodb-pool';
import { cloudAssemblyDir, iamReportFile } from './runtime-kind';
import { startLocalRuntime, type LocalRuntime, type LocalRuntimeOptions } from '../../local/runtime';

/**
 * This worker's DynamoDB Local, which the project's global setup started (test/helpers/dynamodb-pool.ts), if any, and
 * the tables this test file's runtimes make there: named by test/helpers/e2e-tables.ts before the
 * file's first import, so that handler modules a test imports itself read the same names.
 */
export const sharedEngine = () => ({
  dynamoDbEndpoint: workerDynamoDbEndpoint(),
  tableNames: { registry: process.env.REGISTRY_TABLE, timeseries: process.env.TIMESERIES_TABLE },
});

/** The shared engine for a cloud-assembly runtime a test starts itself: the template names its tables. */
export const sharedAssemblyEngine = () => ({ dynamoDbEndpoint: sharedEngine().dynamoDbEndpoint });

/**
 * The runtime an end-to-end test talks to: the sources wired by the route table (`npm start`),
 * or, in the `e2e-cloud` project, the synthesized assembly's template, bundles and IAM
 * (`npm start -- --cloud-assembly`). Each cloud run writes its IAM report into
 * FLEETSTREAM_IAM_REPORT_DIR. Runtimes share the run's DynamoDB Local, each on tables of its own.
 *
 * @example runtime = await startRuntime({ authorizerCacheTtlSeconds: 1 });
 */
export const startRuntime = (options: LocalRuntimeOptions = {}): Promise<LocalRuntime> => {
  const assemblyDir = cloudAssemblyDir();
  if (!assemblyDir) return startLocalRuntime({ ...sharedEngine(), ...options });
  return startCloudAssemblyRuntime({ ...sharedAssemblyEngine(), functionsOnFirstUse: true, ...options, assemblyDir, reportFile: iamReportFile() });
};

/**
 * `it` for what the sources alone decide (validation, ordering, a store's logic): the e2e project
 * runs it, and on the template (e2e-cloud) it is skipped, because the template cannot change its
 * answer. Each file keeps on the template the tests of what the template decides (its wiring, IAM,
 * bundles and the Lambda runtime's behaviour); the project's teardown checks that every route is
 * still called and every permission of test/cloud/iam-exercised.json still used there.
 */
export const itOnTheSources: typeof it = cloudAssemblyDir() ? it.skip : it;
