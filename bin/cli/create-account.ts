/**
 * Creates an account, its first workspace (with its `default` fleet) and an API key bound to it,
 * and prints them as JSON. The key's secret is shown only here.
 *
 *   npm run create-account -- --name Acme --local            # the running `npm start`
 *   REGISTRY_TABLE=<RegistryTableName output> npm run create-account -- --name Acme   # a deployed stack
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    name: { type: 'string' },
    workspace: { type: 'string', default: 'default' },
    'key-name': { type: 'string', default: 'bootstrap' },
    table: { type: 'string' },
    local: { type: 'boolean', default: false },
    'data-dir': { type: 'string', default: process.env.FLEETSTREAM_DATA_DIR ?? '.local' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

const fail = (message: string): never => {
  process.stderr.write(`create-account: ${message}\n`);
  process.exit(2);
};

if (values.help || !values.name) {
  process.stderr.write(
    'usage: npm run create-account -- --name <account name> [--workspace <name>] [--key-name <name>] (--local [--data-dir .local] | --table <registry table>)\n',
  );
  process.exit(values.help ? 0 : 2);
}

let baseUrl: string | undefined;
if (values.local) {
  const file = join(values['data-dir']!, 'runtime.json');
  if (!existsSync(file)) fail(`${file} not found: start the local runtime first (npm start), or pass --data-dir.`);
  const runtime = JSON.parse(readFileSync(file, 'utf8')) as { env: Record<string, string>; base_url: string };
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
