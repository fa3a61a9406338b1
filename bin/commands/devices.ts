import { Option, type Command } from 'commander';
import type { DevicesOptions } from '../cli/devices';
import { addLocalOptions, collect, USAGE_ERROR, wholeNumber } from './options';

/** `fleetstream devices` (`npm run devices`): a workspace's devices that match a query, listed or counted (bin/cli/devices.ts). */
export const register = (program: Command) =>
  addLocalOptions(
    program
      .command('devices')
      .usage("[--q '<query>' | --group <id>] (--local | --url <url>) [options]")
      .summary('list or count the devices of a workspace that match a query')
      .description(
        'list (a table, or --json) or count the devices of a workspace that match a query of the device search language (docs/api.md, "Search"), or a group’s, on the running `npm start` (--local) or a deployed API (--url); every page is read, with progress on stderr',
      )
      .option('--q <query>', 'the query, e.g. \'tags.site = "milan" AND connected = true\' (default: every device)')
      .addOption(new Option('--group <id>', 'a group’s devices (grp-…) instead of a query').conflicts('q'))
      .option('--fleet <id>', 'only the devices of this fleet (repeatable), with --q or alone', collect)
      .option('--workspace <id>', 'the workspace (default: the one the key is bound to)')
      .option('--count', 'print only how many devices match')
      .option('--json', 'print a JSON array of the devices (as the API answers them) instead of a table')
      .option('--page-size <n>', 'devices asked for a page, 1 to 1,000', wholeNumber(1, 1000), 1000)
      .option('--quiet', 'no progress on stderr'),
  )
    .option('--url <url>', 'a deployed API’s base URL, ending in /v3 (the ApiUrl stack output)')
    .option('--key <key>', 'an API key (fsk_…; or FLEETSTREAM_API_KEY); with --local, the data folder’s first key by default')
    .addHelpText(
      'after',
      `
A malformed query exits 2 with the API's message (where in the query, and what was expected); any other refusal, 1.

Examples:
  fleetstream devices --local --q 'tags.site = "milan" AND tags.model = "v2"'
  fleetstream devices --local --q 'firmware_version != "1.2.0"' --count
  fleetstream devices --local --group grp-… --json > devices.json
  fleetstream devices --url https://<api-id>.execute-api.<region>.amazonaws.com/v3 --key fsk_… --q 'connected = false'`,
    )
    .action(async (options: DevicesOptions, command: Command) => {
      if (!options.local && !options.url) command.error('say which API: --local for `npm start`, or --url <ApiUrl of the deployed stack>.', USAGE_ERROR);
      if (options.local && options.url) command.error('give --local or --url, not both.', USAGE_ERROR);
      if (!options.local && !options.key && !process.env.FLEETSTREAM_API_KEY) command.error('--url needs --key <fsk_…> (or FLEETSTREAM_API_KEY).', USAGE_ERROR);
      if (options.group && options.fleet?.length) command.error('--fleet does not apply to --group: a group’s query says which devices.', USAGE_ERROR);
      const { listMatchingDevices } = await import('../cli/devices');
      const code = await listMatchingDevices(options);
      // The program's exit code is 0 once an action ends (bin/fleetstream.ts): a refusal exits itself, stdout written out first.
      if (code) await new Promise<void>((resolve) => process.stdout.write('', () => resolve())).then(() => process.exit(code));
    });
