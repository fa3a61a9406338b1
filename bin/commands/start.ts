import type { Command } from 'commander';
import type { StartFlags } from '../cli/start';

/** `fleetstream start` (`npm start`): the whole system on this machine (bin/cli/start.ts). */
export const register = (program: Command) =>
  program
    .command('start')
    .summary('run the whole system on this machine')
    .description('run the whole system on this machine (no AWS account, no Docker): progress on stderr, then `READY {json}` on stdout; Ctrl-C stops it')
    .option('--in-memory', 'keep nothing on disk (also FLEETSTREAM_IN_MEMORY=1)')
    .option('--cloud-assembly [dir]', 'run the synthesized stack instead of the sources: the cloud assembly in dir, or a fresh `cdk synth`')
    .addHelpText(
      'after',
      `
Its settings are environment variables (PORT, MQTT_PORT, FLEETSTREAM_DATA_DIR, WEBHOOK_TIMEOUT_MS, …),
listed in docs/configuration.md. \`npm start\` also builds the console first when it is stale.

Examples:
  fleetstream start
  PORT=3001 FLEETSTREAM_DATA_DIR=/tmp/fs fleetstream start --in-memory
  fleetstream start --cloud-assembly cdk.out`,
    )
    .action(async (flags: StartFlags) => {
      const { startRuntime } = await import('../cli/start');
      await startRuntime(flags);
    });
