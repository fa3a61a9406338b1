export { cloudAssemblyDir, iamReportFile } from './runtime-kind';
import { startCloudAssemblyRuntime } from '../../local/cloud-assembly/runtime';
import { cloudAssemblyDir, iamReportFile } from './runtime-kind';
import { startLocalRuntime, type LocalRuntime, type LocalRuntimeOptions } from '../../local/runtime';

/**
 * The DynamoDB Local the project's global setup started for every runtime of the run, if any, and
 * the tables this test file's runtimes make there: named by test/helpers/e2e-tables.ts before the
 * file's first import, so that handler modules a test imports itself read the same names.
 */
export const sharedEngine = () => ({
  dynamoDbEndpoint: process.env.FLEETSTREAM_TEST_DYNAMODB_ENDPOINT,
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
