import { InvalidArgumentError, type Command } from 'commander';
import type { CreateAccountOptions } from '../cli/create-account';
import { addLocalOptions, USAGE_ERROR } from './options';

/** An e-mail address as the user pool takes one for a sign-in name: something@somewhere.tld, at most 254 characters. */
const emailAddress = (value: string) => {
  if (value.length > 254 || !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(value)) throw new InvalidArgumentError('Expected an e-mail address, e.g. ops@example.com.');
  return value;
};

/** `fleetstream create-account`: an account, its first workspace, an API key and its first console user (bin/cli/create-account.ts). */
export const register = (program: Command) =>
  addLocalOptions(
    program
      .command('create-account')
      .usage('--name <name> (--local | --table <name>) [--email <address>] [options]')
      .summary('create an account, its first workspace, an API key and its first console user')
      .description(
        'create an account, its first workspace (with its `default` fleet) and an API key, and with --email the account’s first console user (a generated password), and print them as JSON (the key and the password are shown only here)',
      )
      .requiredOption('--name <name>', 'the account’s name')
      .option('--workspace <name>', 'the first workspace’s name', 'default')
      .option('--key-name <name>', 'the API key’s name', 'bootstrap')
      .option('--email <address>', 'also create the account’s first console user, signing in with this address', emailAddress),
  )
    .option('--table <name>', 'a deployed stack’s registry table (its RegistryTableName output; or REGISTRY_TABLE)')
    .option('--user-pool <id>', 'with --email on a deployed stack: its user pool (its UserPoolId output; or USER_POOL_ID)')
    .addHelpText(
      'after',
      `
Examples:
  fleetstream create-account --name Acme --local --email ops@acme.example
  REGISTRY_TABLE=<RegistryTableName output> USER_POOL_ID=<UserPoolId output> fleetstream create-account --name Acme --email ops@acme.example`,
    )
    .action(async (options: CreateAccountOptions, command: Command) => {
      if (!options.local && !options.table && !process.env.REGISTRY_TABLE) {
        command.error('say which stack: --local for `npm start`, or --table <RegistryTableName output of the deployed stack>.', USAGE_ERROR);
      }
      if (options.email !== undefined && !options.local && !options.userPool && !process.env.USER_POOL_ID) {
        command.error('--email on a deployed stack needs its user pool: --user-pool <UserPoolId output of the deployed stack>, or USER_POOL_ID.', USAGE_ERROR);
      }
      const { createAccountOn } = await import('../cli/create-account');
      await createAccountOn(options);
    });
