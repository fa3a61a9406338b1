import { randomUUID } from 'node:crypto';
import { basename, join } from 'node:path';
import { startCloudAssemblyRuntime } from '../../local/cloud-assembly/runtime';
import { startLocalRuntime, type LocalRuntime, type LocalRuntimeOptions } from '../../local/runtime';

/**
 * The synthesized cloud assembly this test file runs on, or undefined for the sources. The
 * `e2e-cloud` jest project says so in its globals (an environment variable would leak into the
 * other projects' workers); its global setup synthesizes once and names the folder in
 * FLEETSTREAM_CLOUD_ASSEMBLY.
 */
export const cloudAssemblyDir = (): string | undefined => {
  if ((globalThis as { FLEETSTREAM_RUNTIME?: string }).FLEETSTREAM_RUNTIME !== 'cloud-assembly') return undefined;
  const dir = process.env.FLEETSTREAM_CLOUD_ASSEMBLY;
  if (!dir) throw new Error('The e2e-cloud project runs without its global setup: FLEETSTREAM_CLOUD_ASSEMBLY is not set.');
  return dir;
};

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

/**
 * Where a cloud run of this test file writes its IAM report (FLEETSTREAM_IAM_REPORT_DIR, which the
 * e2e-cloud project's teardown reads): named for the file, so that a report says what ran it.
 */
export const iamReportFile = (): string | undefined => {
  const dir = process.env.FLEETSTREAM_IAM_REPORT_DIR;
  const file = basename(expect.getState().testPath ?? 'unknown').replace(/\.test\.ts$/, '');
  return dir && join(dir, `iam-${file}-${randomUUID()}.json`);
};
