import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { synthesize } from '../../local/cloud-assembly/synth';
import { startDynamoDbLocal } from '../../local/dynamodb-local';
import { LOCAL_ALARM_SENDER } from '../../local/ses-engine';

/**
 * Global setup of the e2e-cloud project: synthesizes the app once for the whole run (bundling every
 * handler takes a while on two cores), unless FLEETSTREAM_CLOUD_ASSEMBLY already names a
 * `cdk.out` (with the local alarm sender, as `npm start -- --cloud-assembly` synthesizes), and gives the test files its folder and a folder for their IAM reports; and starts
 * the DynamoDB Local every run of the assembly shares, each on tables of its own.
 */
export default async () => {
  // The synthesis (esbuild, CPU) and DynamoDB Local's start (a JVM) overlap.
  const [assembly, dynamo] = await Promise.all([
    process.env.FLEETSTREAM_CLOUD_ASSEMBLY || synthesize({ context: { alarmSender: LOCAL_ALARM_SENDER } }),
    startDynamoDbLocal(),
  ]);
  process.env.FLEETSTREAM_CLOUD_ASSEMBLY = assembly;
  (globalThis as { __cloudDynamo?: unknown }).__cloudDynamo = dynamo;
  process.env.FLEETSTREAM_TEST_DYNAMODB_ENDPOINT = dynamo.endpoint;
  const reports = mkdtempSync(join(tmpdir(), 'fleetstream-iam-'));
  mkdirSync(reports, { recursive: true });
  process.env.FLEETSTREAM_IAM_REPORT_DIR = reports;
  process.env.FLEETSTREAM_CLOUD_STARTED_AT = String(Date.now());
};
