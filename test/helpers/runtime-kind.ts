import { randomUUID } from 'node:crypto';
import { basename, join } from 'node:path';

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
 * Where a cloud run of this test file writes its IAM report (FLEETSTREAM_IAM_REPORT_DIR, which the
 * e2e-cloud project's teardown reads): named for the file, so that a report says what ran it.
 */
export const iamReportFile = (): string | undefined => {
  const dir = process.env.FLEETSTREAM_IAM_REPORT_DIR;
  const file = basename(expect.getState().testPath ?? 'unknown').replace(/\.test\.ts$/, '');
  return dir && join(dir, `iam-${file}-${randomUUID()}.json`);
};
