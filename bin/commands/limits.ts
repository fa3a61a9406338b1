import { InvalidArgumentError, Option, type Command } from 'commander';
import type { LimitsOptions } from '../cli/limits';
import { addLocalOptions, collect, USAGE_ERROR } from './options';

/** `--set devices=5`, repeatable: the values a number, as the limits are (the domain says which names and values it takes). */
const setLimit = (pair: string, previous: Record<string, unknown> = {}) => {
  const match = /^([a-z_]+)=(.*)$/.exec(pair);
  if (!match) throw new InvalidArgumentError('Expected <limit>=<value>, e.g. --set devices=5.');
  const [, name, value] = match;
  return { ...previous, [name]: value.trim() !== '' && Number.isFinite(Number(value)) ? Number(value) : value };
};

/** `fleetstream limits`: one workspace's limits, or one account's, shown or changed by the operator (bin/cli/limits.ts). */
export const register = (program: Command) =>
  addLocalOptions(
    program
      .command('limits')
      .usage('(--workspace <id> | --account <id>) (--local | --table <name>) [options]')
      .summary('show or change a workspace’s (or an account’s) limits')
      .description('show or change one workspace’s limits, or one account’s (workspaces_per_account), on the running `npm start` (--local) or a deployed stack')
      .option('--workspace <id>', 'the workspace (wks-…): its limits, its account’s included')
      .addOption(new Option('--account <id>', 'the account (acc-…): its own limits (workspaces_per_account)').conflicts('workspace'))
      .option('--set <limit=value>', 'set a limit (repeatable), e.g. --set devices=5', setLimit)
      .option('--reset <limit>', 'give a limit back to the deployment’s default (repeatable)', collect)
      .option('--json', 'print JSON instead of a table'),
  )
    .option('--table <name>', 'a deployed stack’s registry table (its RegistryTableName output; or REGISTRY_TABLE)')
    .addHelpText(
      'after',
      `
Examples:
  fleetstream limits --workspace wks-… --local
  fleetstream limits --workspace wks-… --local --set devices=5 --set events_per_device_per_day=2000
  fleetstream limits --workspace wks-… --local --reset devices
  fleetstream limits --account acc-… --local --set workspaces_per_account=3
  REGISTRY_TABLE=<RegistryTableName output> fleetstream limits --workspace wks-… --set requests_per_second_per_key=20 --json`,
    )
    .action(async (options: LimitsOptions, command: Command) => {
      if (!options.local && !options.table && !process.env.REGISTRY_TABLE) {
        command.error('say which stack: --local for `npm start`, or --table <RegistryTableName output of the deployed stack>.', USAGE_ERROR);
      }
      if (!options.workspace && !options.account) command.error('say whose limits: --workspace <wks-…> or --account <acc-…>.', USAGE_ERROR);
      const { showOrChangeLimits } = await import('../cli/limits');
      await showOrChangeLimits(options);
    });
