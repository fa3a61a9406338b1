import { InvalidArgumentError, type Command } from 'commander';
import type { DeviceOptions } from '../cli/device';
import { MAX_TIMER_SECONDS, numberFrom, USAGE_ERROR, wholeNumber } from './options';

/** `--device-tag site=milan`, repeatable: a tag of the devices --create makes (spec/fleet-state.md §1: key 1–64 of [A-Za-z0-9_.-]; the API checks the rest). */
const deviceTag = (pair: string, previous: Record<string, string> = {}) => {
  const match = /^([A-Za-z0-9_.-]{1,64})=(.*)$/s.exec(pair);
  if (!match) throw new InvalidArgumentError('Expected <key>=<value>, the key 1 to 64 letters, digits, "_", "." or "-", e.g. --device-tag site=milan.');
  return { ...previous, [match[1]]: match[2] };
};

/** `fleetstream device` (`npm run device`): simulated devices over MQTT (bin/cli/device.ts). */
export const register = (program: Command) =>
  program
    .command('device')
    .usage('--credentials <file> [options]')
    .summary('simulate devices over MQTT')
    .description(
      'simulated devices that speak the MQTT device protocol from their credentials: they answer jobs and FOTAs (downloading and checking firmware) and publish data points; Ctrl-C stops them',
    )
    .requiredOption('--credentials <file>', 'the zdevice.json from POST …/identities, or a JSON array of such documents')
    .option('--count <n>', 'run the first n devices of a credentials file holding an array (default: all of them)', wholeNumber(1))
    .option(
      '--create <n>',
      'first create n devices with credentials over the HTTP API and write them to --credentials as an array; needs --base-url, --api-key and --workspace',
      wholeNumber(1),
    )
    .option('--base-url <url>', 'with --create: the API (the READY line’s base_url)')
    .option('--api-key <key>', 'with --create: an API key (the READY line’s api_key)')
    .option('--workspace <id>', 'with --create: the workspace (the READY line’s workspace_id)')
    .option('--device-tag <key=value>', 'with --create: a tag of the devices it creates (repeatable), e.g. --device-tag site=milan', deviceTag)
    .option('--interval <seconds>', 'seconds between data points, 0 (no data) to 86,400', numberFrom(0, 86_400), 5)
    .option('--tag <tag>', 'the data points’ tag', 'telemetry')
    .option('--duration <seconds>', 'stop after this long (default: run until Ctrl-C)', wholeNumber(1, MAX_TIMER_SECONDS))
    .option(
      '--corrupt <fraction>',
      'share of the devices (the first ones), 0 to 1, whose firmware downloads arrive with a byte changed, so that they report the FOTA failed',
      numberFrom(0, 1),
      0,
    )
    .option(
      '--state <file>',
      'a JSON object: the state the devices start with and report (e.g. {"interval": 30}); they apply the desired state they are sent and report it; one device writes what it applied back to the file',
    )
    .option('--refuse <key>', 'a desired key the devices do not apply, so that it stays pending (repeatable)', (key: string, previous: string[] = []) => [
      ...previous,
      key,
    ])
    .option('--quiet', 'only a summary line every 5 seconds')
    .addHelpText(
      'after',
      `
Examples:
  fleetstream device --credentials zdevice.json --interval 2
  fleetstream device --create 100 --credentials fleet.json --base-url $B --api-key $K --workspace $WS --quiet
  fleetstream device --create 10 --device-tag site=milan --device-tag model=v2 --credentials milan.json --base-url $B --api-key $K --workspace $WS
  fleetstream device --credentials fleet.json --count 100 --corrupt 0.2 --quiet
  fleetstream device --credentials zdevice.json --state state.json --refuse mode`,
    )
    .action(async (options: DeviceOptions, command: Command) => {
      const needs = { '--base-url': options.baseUrl, '--api-key': options.apiKey, '--workspace': options.workspace };
      const missing = Object.entries(needs).flatMap(([flag, value]) => (value === undefined ? [flag] : []));
      if (options.create !== undefined && missing.length) command.error(`--create needs ${missing.join(', ')}.`, USAGE_ERROR);
      if (options.deviceTag && options.create === undefined) command.error('--device-tag tags the devices --create makes: give --create <n>.', USAGE_ERROR);
      const { simulateDevices } = await import('../cli/device');
      await simulateDevices(options);
    });
