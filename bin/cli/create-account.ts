/**
 * Creates an account, its first workspace (with its `default` fleet) and an API key bound to it,
 * and prints them as JSON. The key's secret is shown only here.
 *
 *   fleetstream create-account --name Acme --local            # the running `npm start` (--port when several share .local)
 *   REGISTRY_TABLE=<RegistryTableName output> fleetstream create-account --name Acme   # a deployed stack
 */
import type { LocalOptions } from '../commands/options';
import { findRuntime } from '../../local/runtime-file';

/** `create-account`'s options: which stack (`--local`, or `--table` or REGISTRY_TABLE) and what to create. */
export interface CreateAccountOptions extends LocalOptions {
  name: string;
  workspace: string;
  keyName: string;
  table?: string;
}

const fail = (message: string): never => {
  process.stderr.write(`create-account: ${message}\n`);
  process.exit(2);
};

/** Creates the account on the stack the options name and prints it; a failure is said in one line and exits 2. */
export const createAccountOn = async (options: CreateAccountOptions) => {
  let baseUrl: string | undefined;
  if (options.local) {
    try {
      const runtime = findRuntime(options.dataDir, options.port);
      Object.assign(process.env, runtime.env);
      baseUrl = runtime.base_url;
    } catch (error) {
      fail((error as Error).message);
    }
  } else if (options.table) {
    process.env.REGISTRY_TABLE = options.table;
  }

  // Imported after the environment is set: the registry reads REGISTRY_TABLE once.
  const { createAccount } = await import('../../lambdas/domain/tenancy/accounts');
  const { registryDb } = await import('../../lambdas/shared/clients');
  try {
    const account = await createAccount(registryDb(), { name: options.name, workspaceName: options.workspace, keyName: options.keyName });
    process.stdout.write(`${JSON.stringify({ ...account, ...(baseUrl ? { base_url: baseUrl } : {}) }, null, 2)}\n`);
  } catch (error) {
    fail(`${(error as Error).name}: ${(error as Error).message} (check AWS credentials and the table name)`);
  }
};
