import { Option, type Command } from 'commander';
import type { AckOptions, AlarmsOptions } from '../cli/alarms';
import { addLocalOptions, USAGE_ERROR, wholeNumber } from './options';

// As lambdas/schemas/alarms.ts's (not imported: `--help` answers without loading the API's schemas).
const STATUSES = ['open', 'acknowledged', 'closed', 'all'];
const SEVERITIES = ['critical', 'major', 'minor', 'warning'];

/** The API to call: `--local` (the running `npm start`) or `--url` with `--key`, as `fleetstream devices`. */
const withApi = (command: Command) =>
  addLocalOptions(command)
    .option('--url <url>', 'a deployed API’s base URL, ending in /v3 (the ApiUrl stack output)')
    .option('--key <key>', 'an API key (fsk_…; or FLEETSTREAM_API_KEY); with --local, the data folder’s first key by default')
    .option('--workspace <id>', 'the workspace (default: the one the key is bound to)')
    .option('--json', 'print JSON (as the API answers) instead of a table');

/** The checks of `--local`/`--url`/`--key` that commander cannot make. */
const checkApi = (options: { local?: boolean; url?: string; key?: string }, command: Command) => {
  if (!options.local && !options.url) command.error('say which API: --local for `npm start`, or --url <ApiUrl of the deployed stack>.', USAGE_ERROR);
  if (options.local && options.url) command.error('give --local or --url, not both.', USAGE_ERROR);
  if (!options.local && !options.key && !process.env.FLEETSTREAM_API_KEY) command.error('--url needs --key <fsk_…> (or FLEETSTREAM_API_KEY).', USAGE_ERROR);
};

/** Exits with the action's code when it is not 0 (bin/fleetstream.ts exits 0 once an action ends), stdout written out first. */
const exitWith = async (code: number) => {
  if (code) await new Promise<void>((resolve) => process.stdout.write('', () => resolve())).then(() => process.exit(code));
};

/** `fleetstream alarms` (`npm run alarms`): a workspace's alarms listed, and `alarms ack` (bin/cli/alarms.ts). */
export const register = (program: Command) => {
  const alarms = withApi(
    program
      .command('alarms')
      .usage(
        '[--status <status>] [--severity <severity>] [--device <name|id>] (--local | --url <url>) [options]\n       fleetstream alarms ack <alarm-id> [--note <text>] (--local | --url <url>)',
      )
      .summary('list a workspace’s alarms (open ones by default), or acknowledge one')
      .description(
        'list the alarms of a workspace (docs/alarms.md), newest first, open ones unless --status says otherwise, as a table or --json, on the running `npm start` (--local) or a deployed API (--url); `alarms ack <alarm-id>` acknowledges one',
      )
      .addOption(new Option('--status <status>', 'only alarms in this status (all: every status)').choices(STATUSES).default('open'))
      .addOption(new Option('--severity <severity>', 'only alarms of this severity').choices(SEVERITIES))
      .option('--device <name|id>', 'only the alarms of this device, by its ID (dev-…) or its name')
      .option('--rule <id>', 'only the alarms of this rule (alr-…)')
      .option('--page-size <n>', 'alarms asked for a page, 1 to 1,000', wholeNumber(1, 1000), 1000)
      .option('--quiet', 'no progress on stderr'),
  )
    .addHelpText(
      'after',
      `
An unknown device, rule or alarm, a closed alarm to acknowledge (the API's 409) exit 2 with the reason; any other refusal, 1.

Examples:
  fleetstream alarms --local
  fleetstream alarms --local --severity critical --device freezer-3
  fleetstream alarms --local --status all --json > alarms.json
  fleetstream alarms ack alm-… --note 'door was open, closing it' --local
  fleetstream alarms --url https://<api-id>.execute-api.<region>.amazonaws.com/v3 --key fsk_…`,
    )
    .action(async (options: AlarmsOptions, command: Command) => {
      checkApi(options, command);
      const { listAlarms } = await import('../cli/alarms');
      await exitWith(await listAlarms(options));
    });
  withApi(
    alarms
      .command('ack')
      .argument('<alarm-id>', 'the alarm (alm-…)')
      .usage('<alarm-id> [--note <text>] (--local | --url <url>) [options]')
      .summary('acknowledge an alarm')
      .description('acknowledge an open alarm, with a note, by the API key’s name; one acknowledged already answers as it is, a closed one is refused')
      .option('--note <text>', 'what is being done about it (up to 1,024 characters)'),
  ).action(async (alarmId: string, _options: AckOptions, command: Command) => {
    // `alarms`' own options take those given after `ack` too (commander's default): read both.
    const options = command.optsWithGlobals<AckOptions>();
    checkApi(options, command);
    const { acknowledgeAlarm } = await import('../cli/alarms');
    await exitWith(await acknowledgeAlarm(alarmId, options));
  });
};
