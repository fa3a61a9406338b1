// `npm test`: jest, with the run's temporary files in a folder of its own that goes when the run
// ends. The test files, their workers and what they spawn (`npm start`s, `cdk synth`, Chromium)
// make their temporary folders through os.tmpdir(), which reads TMPDIR: the CDK apps' cloud
// assemblies, the run's synthesis, the runtimes' data folders. Left in /tmp, a run left about
// 300 MB there. A run that was killed leaves its folder; the next run deletes it. Jest's own cache
// stays where it was (its default folder under the system's temporary folder), so that a second
// run does not transform the sources again. FLEETSTREAM_KEEP_TEST_TMP=1 keeps the folder and says
// where it is. Plain JavaScript, started by node with --experimental-vm-modules (package.json).
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const PREFIX = 'fleetstream-test-';

/** Whether a process of that number is running. */
const isAlive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
};

const system = tmpdir();
for (const name of readdirSync(system)) {
  const owner = name.startsWith(PREFIX) ? Number(name.slice(PREFIX.length).split('-')[0]) : Number.NaN;
  if (Number.isInteger(owner) && !isAlive(owner)) rmSync(join(system, name), { recursive: true, force: true });
}
const scratch = mkdtempSync(join(system, `${PREFIX}${process.pid}-`));

if (!process.argv.some((arg) => arg.startsWith('--cacheDirectory'))) {
  // jest's default, computed from the system's folder before TMPDIR moves
  process.argv.push(`--cacheDirectory=${join(system, `jest_${process.getuid?.().toString(36) ?? ''}`.replace(/_$/, ''))}`);
}
process.env.TMPDIR = scratch;
process.on('exit', () => {
  if (process.env.FLEETSTREAM_KEEP_TEST_TMP === '1') console.log(`the run's temporary files are in ${scratch}`);
  else rmSync(scratch, { recursive: true, force: true });
});

await import('jest/bin/jest');
