/**
 * `fleetstream <command>`: every command of the project behind one entry (bin/commands/program.ts).
 * Run as `npx fleetstream …` (the package's bin, bin/fleetstream.mjs) or `tsx bin/fleetstream.ts …`;
 * the npm scripts (`npm start`, `npm run device`, …) are aliases of its commands.
 */
import { runFleetstream } from './commands/program';

try {
  // Not process.exit: `start` and `device` go on running after their action resolves.
  process.exitCode = await runFleetstream(process.argv.slice(2));
} catch (error) {
  // The commands say what went wrong themselves; anything else, in one line.
  process.stderr.write(`fleetstream: ${(error as Error).message}\n`);
  process.exitCode = 1;
}
