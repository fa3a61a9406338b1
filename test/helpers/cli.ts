import { fileURLToPath } from 'node:url';

/** bin/fleetstream.ts, the entry of every command. */
export const FLEETSTREAM = fileURLToPath(new URL('../../bin/fleetstream.ts', import.meta.url));

/**
 * The arguments of `process.execPath` that run `fleetstream <command> …args` through tsx, as
 * `npm run <command>` does: `spawn(process.execPath, fleetstreamArgs('device', ['--quiet']))`.
 */
export const fleetstreamArgs = (command: string, args: string[] = []) => ['--import', 'tsx', FLEETSTREAM, command, ...args];
