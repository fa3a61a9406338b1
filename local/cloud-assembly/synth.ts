import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const PROJECT_ROOT = join(import.meta.dirname, '../..');

/**
 * Synthesizes the CDK app as `cdk deploy` would (`cdk synth`: cdk.json's app, cdk-nag, esbuild
 * bundling of every handler) into `outDir` (a new temporary folder when absent), with extra
 * context (`timeseries: 'timestream'`), and resolves with the folder.
 * @throws Error with the CLI's output when synthesis fails
 */
export const synthesize = async (options: { outDir?: string; context?: Record<string, string> } = {}): Promise<string> => {
  const outDir = options.outDir ?? mkdtempSync(join(tmpdir(), 'fleetstream-cdk-out-'));
  const context = Object.entries(options.context ?? {}).flatMap(([k, v]) => ['-c', `${k}=${v}`]);
  await promisify(execFile)(join(PROJECT_ROOT, 'node_modules/.bin/cdk'), ['synth', '--quiet', '--no-notices', '-o', outDir, ...context], {
    cwd: PROJECT_ROOT,
    // Offline and quiet: no usage telemetry from the CLI (tests and CI synthesize often).
    env: { ...process.env, CDK_DISABLE_CLI_TELEMETRY: 'true' },
    maxBuffer: 64 * 1024 * 1024,
  }).catch((error: Error & { stderr?: string }) => {
    throw new Error(`cdk synth failed: ${error.stderr ?? error.message}`);
  });
  return outDir;
};
