/**
 * Creates an account, its first workspace (with its `default` fleet) and an API key bound to it,
 * and prints them as JSON. The key's secret is shown only here.
 *
 *   npm run create-account -- --name Acme --local            # the running `npm start` (--port when several share .local)
 *   REGISTRY_TABLE=<RegistryTableName output> npm run create-account -- --name Acme   # a deployed stack
 */
import { parseArgs } from 'node:util';
import { findRuntime } from '../../local/runtime-file';

const { values } = parseArgs({
  options: {
    name: { type: 'string' },
    workspace: { type: 'string', default: 'default' },
    'key-name': { type: 'string', default: 'bootstrap' },
    table: { type: 'string' },
    local: { type: 'boolean', default: false },
    'data-dir': { type: 'string', default: process.env.FLEETSTREAM_DATA_DIR || '.local' },
    port: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

const fail = (message: string): never => {
  process.stderr.write(`create-account: ${message}\n`);
  process.exit(2);
};

if (values.help || !values.name) {
  process.stderr.write(
    'usage: npm run create-account -- --name <account name> [--workspace <name>] [--key-name <name>] (--local [--data-dir .local] [--port <port>] | --table <registry table>)\n',
  );
  process.exit(values.help ? 0 : 2);
}

/** The running `npm start` on the data folder (the one on `--port` when several run there). */
const localRuntime = (dataDir: string, port: string | undefined) => {
  if (port !== undefined && !/^\d+$/.test(port)) fail(`--port ${port}: expected a port number.`);
  try {
    return findRuntime(dataDir, port === undefined ? undefined : Number(port));
  } catch (error) {
    return fail((error as Error).message);
  }
};

let baseUrl: string | undefined;
if (values.local) {
  const runtime = localRuntime(values['data-dir']!, values.port);
  Object.assign(process.env, runtime.env);
  baseUrl = runtime.base_url;
} else if (values.table) {
  process.env.REGISTRY_TABLE = values.table;
} else if (!process.env.REGISTRY_TABLE) {
  fail('say which stack: --local for `npm start`, or --table <RegistryTableName output of the deployed stack>.');
}

// Imported after the environment is set: the registry reads REGISTRY_TABLE once.
const { createAccount } = await import('../../lambdas/domain/accounts');
const { registryDb } = await import('../../lambdas/shared/clients');
try {
  const account = await createAccount(registryDb(), { name: values.name!, workspaceName: values.workspace, keyName: values['key-name'] });
  process.stdout.write(JSON.stringify({ ...account, ...(baseUrl ? { base_url: baseUrl } : {}) }, null, 2) + '\n');
} catch (error) {
  fail(`${(error as Error).name}: ${(error as Error).message} (check AWS credentials and the table name)`);
}
