import type { Config } from '@jest/types';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LOCAL_ALARM_SENDER } from '../../local/ses-engine';
import { synthesizeInBackground } from './assembly-synthesis';
import { startDynamoDbPool } from './dynamodb-pool';

/** The synthesis this setup started, which the teardown waits for. */
export const synthesis = globalThis as { __assemblySynthesis?: Promise<void> };

/**
 * Global setup of the e2e-cloud project: starts synthesizing the app once for the whole run, with the
 * local alarm sender as `npm start -- --cloud-assembly` synthesizes, unless FLEETSTREAM_CLOUD_ASSEMBLY
 * already names a `cdk.out`. The synthesis (bundling every handler, about 40 CPU-s) goes on in the
 * background while the other projects' files run; each e2e-cloud file waits for it
 * (test/helpers/assembly-ready.ts) and the teardown for its end. Also gives the files a folder for
 * their IAM reports, and starts the run's DynamoDB Locals (test/helpers/dynamodb-pool.ts) unless
 * another project's setup did.
 */
export default async (globalConfig: Config.GlobalConfig) => {
  if (!process.env.FLEETSTREAM_CLOUD_ASSEMBLY) {
    const outDir = mkdtempSync(join(tmpdir(), 'fleetstream-cdk-out-'));
    synthesis.__assemblySynthesis = synthesizeInBackground(outDir, { alarmSender: LOCAL_ALARM_SENDER });
    Object.assign(process.env, { FLEETSTREAM_CLOUD_ASSEMBLY: outDir, FLEETSTREAM_CLOUD_ASSEMBLY_SYNTHESIZING: '1' });
  }
  await startDynamoDbPool(globalConfig);
  const reports = mkdtempSync(join(tmpdir(), 'fleetstream-iam-'));
  mkdirSync(reports, { recursive: true });
  process.env.FLEETSTREAM_IAM_REPORT_DIR = reports;
  process.env.FLEETSTREAM_CLOUD_STARTED_AT = String(Date.now());
};
