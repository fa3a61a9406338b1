import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { synthesize } from '../../local/cloud-assembly/synth';

/**
 * Global setup of the e2e-cloud project: synthesizes the app once for the whole run (bundling every
 * handler takes a while on two cores), unless FLEETSTREAM_CLOUD_ASSEMBLY already names a
 * `cdk.out`, and gives the test files its folder and a folder for their IAM reports.
 */
export default async () => {
  process.env.FLEETSTREAM_CLOUD_ASSEMBLY ||= await synthesize();
  const reports = mkdtempSync(join(tmpdir(), 'fleetstream-iam-'));
  mkdirSync(reports, { recursive: true });
  process.env.FLEETSTREAM_IAM_REPORT_DIR = reports;
  process.env.FLEETSTREAM_CLOUD_STARTED_AT = String(Date.now());
};
