import type { Command } from 'commander';
import type { CreateAccountOptions } from '../cli/create-account';
import { addLocalOptions, USAGE_ERROR } from './options';

/** `fleetstream create-account`: an account, its first workspace and an API key (bin/cli/create-account.ts). */
export const register = (program: Command) =>
  addLocalOptions(
    program
      .command('create-account')
      .usage('--name <name> (--local | --table <name>) [options]')
      .summary('create an account, its first workspace and an API key')
      .description('create an account, its first workspace (with its `default` fleet) and an API key, and print them as JSON (the key is shown only here)')
      .requiredOption('--name <name>', 'the account’s name')
      .option('--workspace <name>', 'the first workspace’s name', 'default')
      .option('--key-name <name>', 'the API key’s name', 'bootstrap'),
  )
    .option('--table <name>', 'a deployed stack’s registry table (its RegistryTableName output; or REGISTRY_TABLE)')
    .addHelpText(
      'after',
      `
Examples:
  fleetstream create-account --name Acme --local
  REGISTRY_TABLE=<RegistryTableName output> fleetstream create-account --name Acme`,
    )
    .action(async (options: CreateAccountOptions, command: Command) => {
      if (!options.local && !options.table && !process.env.REGISTRY_TABLE) {
        command.error('say which stack: --local for `npm start`, or --table <RegistryTableName output of the deployed stack>.', USAGE_ERROR);
      }
      const { createAccountOn } = await import('../cli/create-account');
      await createAccountOn(options);
    });
