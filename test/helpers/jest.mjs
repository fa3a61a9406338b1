// `npm test`: jest, with the run's temporary files in a folder of its own that goes when the run
// ends. The test files, their workers and what they spawn (`npm start`s, `cdk synth`, Chromium)
// make their temporary folders through os.tmpdir(), which reads TMPDIR: the CDK apps' cloud
// assemblies, the run's synthesis, the runtimes' data folders. Left in /tmp, a run left about
// 300 MB there. A run that was killed leaves its folder; the next run deletes it. Jest's own cache
// stays where it was (its default folder under the system's temporary folder), so that a second
// run does not transform the sources again; tsx's cache (the spawned `npm start`s') is made anew
// once a run. FLEETSTREAM_KEEP_TEST_TMP=1 keeps the folder and says where it is. Plain JavaScript,
// started by node with --experimental-vm-modules (package.json).
import { mkdtempSync, readdirSync, realpathSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const PREFIX = 'fleetstream-test-';
const system = tmpdir();
const uid = process.getuid?.();

/**
 * Whether a process of that number is running. A copy of local/runtime-file.ts's: this file runs
 * before any TypeScript loader.
 */
const isAlive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
};

/** Deletes a folder, saying why it could not rather than failing the run. */
const remove = (path) => {
  try {
    rmSync(path, { recursive: true, force: true, maxRetries: 3 });
  } catch (error) {
    console.error(`could not delete ${path}: ${error.message}`);
  }
};

/** Whether the folder is this user's (another user's cannot be deleted from a shared /tmp). */
const isOwn = (path) => {
  try {
    return uid === undefined || statSync(path).uid === uid;
  } catch {
    return false;
  }
};

// The folders of this user's runs that ended without deleting theirs (killed).
for (const name of readdirSync(system)) {
  if (!name.startsWith(PREFIX)) continue;
  const owner = Number(name.slice(PREFIX.length).split('-')[0]);
  const path = join(system, name);
  if (Number.isInteger(owner) && !isAlive(owner) && isOwn(path)) remove(path);
}
const scratch = mkdtempSync(join(system, `${PREFIX}${process.pid}-`));

// Jest's default cache folder, as jest-config computes it from the system's folder, unless given.
if (!process.argv.some((arg) => arg.startsWith('--cacheDirectory') || arg.startsWith('--cache-directory'))) {
  const cache = join(realpathSync(system), uid === undefined ? 'jest' : `jest_${uid.toString(36)}`);
  process.argv.push(`--cacheDirectory=${cache}`);
}
process.env.TMPDIR = scratch;
process.on('exit', () => {
  if (process.env.FLEETSTREAM_KEEP_TEST_TMP === '1') console.error(`the run's temporary files are in ${scratch}`);
  else remove(scratch);
});

await import('jest/bin/jest');
