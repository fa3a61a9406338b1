import type { Config } from '@jest/types';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { synthesize } from '../../local/cloud-assembly/synth';
import { LOCAL_ALARM_SENDER } from '../../local/ses-engine';
import { startDynamoDbPool } from './dynamodb-pool';

/**
 * Global setup of the e2e-cloud project: synthesizes the app once for the whole run (bundling every
 * handler takes a while on two cores), unless FLEETSTREAM_CLOUD_ASSEMBLY already names a
 * `cdk.out` (with the local alarm sender, as `npm start -- --cloud-assembly` synthesizes), and gives the test files its folder and a folder for their IAM reports; and starts
 * the run's DynamoDB Locals (test/helpers/dynamodb-pool.ts), unless another project's setup did.
 */
export default async (globalConfig: Config.GlobalConfig) => {
  // The synthesis (esbuild, CPU) and DynamoDB Local's start (JVMs) overlap.
  const [assembly] = await Promise.all([
    process.env.FLEETSTREAM_CLOUD_ASSEMBLY || synthesize({ context: { alarmSender: LOCAL_ALARM_SENDER } }),
    startDynamoDbPool(globalConfig),
  ]);
  process.env.FLEETSTREAM_CLOUD_ASSEMBLY = assembly;
  const reports = mkdtempSync(join(tmpdir(), 'fleetstream-iam-'));
  mkdirSync(reports, { recursive: true });
  process.env.FLEETSTREAM_IAM_REPORT_DIR = reports;
  process.env.FLEETSTREAM_CLOUD_STARTED_AT = String(Date.now());
};
