/**
 * Creates an account, its first workspace (with its `default` fleet) and an API key bound to it,
 * and with `--email` the account's first console user (its password generated and shown once), and
 * prints them as JSON. The key's secret and the password are shown only here.
 *
 *   fleetstream create-account --name Acme --local --email ops@acme.example   # the running `npm start` (--port when several share .local)
 *   REGISTRY_TABLE=<RegistryTableName output> USER_POOL_ID=<UserPoolId output> fleetstream create-account --name Acme --email ops@acme.example
 */
import type { LocalOptions } from '../commands/options';
import { findRuntime } from '../../local/runtime-file';
import { createPoolUser, strongPassword, userExists, userPoolOf } from './console-user';

/** `create-account`'s options: which stack (`--local`, or `--table` or REGISTRY_TABLE) and what to create. */
export interface CreateAccountOptions extends LocalOptions {
  name: string;
  workspace: string;
  keyName: string;
  table?: string;
  /** The first console user's e-mail address. */
  email?: string;
  /** A deployed stack's user pool (or USER_POOL_ID). */
  userPool?: string;
}

const fail = (message: string, code = 2): never => {
  process.stderr.write(`create-account: ${message}\n`);
  process.exit(code);
};

const reason = (error: unknown) => `${(error as Error).name}: ${(error as Error).message}`;

/** Where the command acts: the running `npm start`'s engines (its variables set here), or a deployed stack's. */
const stackOf = (options: CreateAccountOptions) => {
  if (options.local) {
    try {
      const runtime = findRuntime(options.dataDir, options.port);
      Object.assign(process.env, runtime.env);
      const { USER_POOL_ID: userPoolId } = runtime.env;
      return { baseUrl: runtime.base_url, consoleUrl: userPoolId ? new URL('/', runtime.base_url).href : undefined, userPoolId };
    } catch (error) {
      return fail((error as Error).message);
    }
  }
  if (options.table) process.env.REGISTRY_TABLE = options.table;
  return { baseUrl: undefined, consoleUrl: undefined, userPoolId: options.userPool ?? process.env.USER_POOL_ID };
};

/**
 * Creates the account on the stack the options name and prints it; with `--email`, first checks
 * that the user pool has no user of that address (so that nothing is written when it has), then
 * makes the user and links it to the account. A failure is said in one line: exit 2 for what the
 * caller must change (no stack, no user pool, an address taken), 1 when a call failed after the
 * account was written (the account is printed all the same, its key being shown only then).
 */
export const createAccountOn = async (options: CreateAccountOptions) => {
  const stack = stackOf(options);
  const pool = options.email === undefined ? undefined : stack.userPoolId ? userPoolOf(stack.userPoolId) : undefined;
  if (options.email !== undefined && !pool) {
    // (a deployed stack without one is a usage error of the command: bin/commands/create-account.ts)
    fail('the running `npm start` names no user pool (one started before `--email` existed, or a template without a console): restart it.');
  }
  if (pool && options.email !== undefined) {
    const taken = await userExists(pool, options.email).catch((error: unknown) => fail(`${reason(error)} (check AWS credentials and the user pool's ID)`, 1));
    if (taken) fail(`a console user ${options.email} already exists in the user pool: sign in as that user, or give another --email.`);
  }

  // Imported after the environment is set: the registry reads REGISTRY_TABLE once.
  const { createAccount } = await import('../../lambdas/domain/tenancy/accounts');
  const { addUserToAccount } = await import('../../lambdas/domain/tenancy/users');
  const { registryDb } = await import('../../lambdas/shared/clients');
  const account = await createAccount(registryDb(), { name: options.name, workspaceName: options.workspace, keyName: options.keyName }).catch(
    (error: unknown) => fail(`${reason(error)} (check AWS credentials and the table name)`),
  );
  const printed = { ...account, ...(stack.baseUrl ? { base_url: stack.baseUrl } : {}) };
  if (!pool || options.email === undefined) {
    process.stdout.write(`${JSON.stringify(printed, null, 2)}\n`);
    return;
  }
  const email = options.email;
  const password = strongPassword();
  try {
    const sub = await createPoolUser(pool, email, password);
    await addUserToAccount(registryDb(), { sub, email }, account.account_id);
    const user = { email, password, user_id: sub, ...(stack.consoleUrl ? { console_url: stack.consoleUrl } : {}) };
    process.stdout.write(`${JSON.stringify({ ...printed, console_user: user }, null, 2)}\n`);
  } catch (error) {
    process.stdout.write(`${JSON.stringify(printed, null, 2)}\n`);
    fail(`the account was created (above), but not its console user ${email}: ${reason(error)} (check AWS credentials and the user pool's ID)`, 1);
  }
};
