import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as pause } from 'node:timers/promises';
import { synthesize } from '../../local/cloud-assembly/synth';

/**
 * The e2e-cloud project's synthesis runs in the background of the run: its global setup starts it
 * and returns, so that the other projects' files start at once, and each e2e-cloud file waits for it
 * before its first import (test/helpers/assembly-ready.ts). A marker file in the folder says how it
 * ended, because the files run in other processes.
 */
const DONE = '.fleetstream-synthesized';
const FAILED = '.fleetstream-synthesis-failed';

/** Starts synthesizing into `outDir`; resolves once it ended and its marker is written (never rejects). */
export const synthesizeInBackground = (outDir: string, context: Record<string, string>): Promise<void> =>
  synthesize({ outDir, context }).then(
    () => writeFileSync(join(outDir, DONE), ''),
    (error: Error) => writeFileSync(join(outDir, FAILED), error.message),
  );

/**
 * Waits until the synthesis into `dir` has ended, at most `ms` (bundling every handler on two
 * loaded cores takes about a minute).
 * @throws Error with the CLI's output when it failed, or when it has not ended in time
 */
export const untilSynthesized = async (dir: string, ms = 600_000): Promise<void> => {
  const deadline = Date.now() + ms;
  while (!existsSync(join(dir, DONE))) {
    if (existsSync(join(dir, FAILED))) throw new Error(readFileSync(join(dir, FAILED), 'utf8'));
    if (Date.now() > deadline) throw new Error(`the run's synthesis into ${dir} has not ended within ${ms / 1000} s`);
    await pause(250);
  }
};
