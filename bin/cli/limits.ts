/**
 * Shows or changes one workspace's limits, for the operator: against the running `npm start`
 * (`--local`) or a deployed stack (its registry table), like create-account.
 *
 *   npm run limits -- --workspace wks-… --local                                  # print them
 *   npm run limits -- --workspace wks-… --local --set devices=5 --set fleets=2   # set some (--reset devices: back to the default)
 *   REGISTRY_TABLE=<RegistryTableName output> npm run limits -- --workspace wks-… --set points_per_device_per_day=50000
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { findRuntime } from '../../local/runtime-file';

const USAGE =
  'usage: npm run limits -- --workspace <id> [--set <limit>=<value> …] [--reset <limit> …] [--json] (--local [--data-dir .local] [--port <port>] | --table <registry table>)';

const fail = (message: string, code = 1): never => {
  process.stderr.write(`limits: ${message}\n`);
  process.exit(code);
};

const parse = () =>
  parseArgs({
    options: {
      workspace: { type: 'string' },
      set: { type: 'string', multiple: true, default: [] },
      reset: { type: 'string', multiple: true, default: [] },
      json: { type: 'boolean', default: false },
      table: { type: 'string' },
      local: { type: 'boolean', default: false },
      'data-dir': { type: 'string', default: process.env.FLEETSTREAM_DATA_DIR || '.local' },
      port: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
let values!: ReturnType<typeof parse>['values'];
try {
  ({ values } = parse());
} catch (error) {
  fail(`${(error as Error).message}\n${USAGE}`, 2);
}

if (values.help || !values.workspace) {
  process.stderr.write(`${USAGE}\n`);
  process.exit(values.help ? 0 : 2);
}

// `--set devices=5`: the value a number, as the limits are.
const set: Record<string, unknown> = {};
for (const pair of values.set!) {
  const match = /^([a-z_]+)=(.*)$/.exec(pair);
  if (!match) fail(`--set ${pair}: expected <limit>=<value>, e.g. --set devices=5.`, 2);
  set[match![1]] = match![2].trim() !== '' && Number.isFinite(Number(match![2])) ? Number(match![2]) : match![2];
}

if (values.local) {
  const port = values.port;
  if (port !== undefined && !/^\d+$/.test(port)) fail(`--port ${port}: expected a port number.`, 2);
  try {
    Object.assign(process.env, findRuntime(values['data-dir']!, port === undefined ? undefined : Number(port)).env);
  } catch (error) {
    fail((error as Error).message);
  }
} else if (values.table) {
  process.env.REGISTRY_TABLE = values.table;
} else if (!process.env.REGISTRY_TABLE) {
  fail('say which stack: --local for `npm start`, or --table <RegistryTableName output of the deployed stack>.', 2);
}
// A deployed stack's defaults are its deploy context's: this project's cdk.json, unless given as the stack gives them.
if (!values.local && !process.env.WORKSPACE_LIMIT_DEFAULTS) {
  const context = (JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as { context?: { limits?: unknown } }).context;
  if (context?.limits) process.env.WORKSPACE_LIMIT_DEFAULTS = JSON.stringify(context.limits);
}

// Imported after the environment is set: the registry and the defaults are read once.
const { changeWorkspaceLimits, showWorkspaceLimits } = await import('../../lambdas/domain/limits');
const { registryDb } = await import('../../lambdas/shared/clients');
const { AppError } = await import('../../lambdas/shared/errors');
const { LIMIT_NAMES } = await import('../../lambdas/schemas/limits');

try {
  const changing = Object.keys(set).length > 0 || values.reset!.length > 0;
  const report = changing
    ? await changeWorkspaceLimits(registryDb(), values.workspace!, { set, reset: values.reset })
    : await showWorkspaceLimits(registryDb(), values.workspace!);
  if (values.json) {
    process.stdout.write(JSON.stringify(report, null, 2) + '\n');
  } else {
    const rows = LIMIT_NAMES.map((name) => [
      name,
      String(report.limits[name]),
      name in report.own ? 'workspace' : 'default',
      name in report.counts ? String(report.counts[name as keyof typeof report.counts] ?? 'not counted yet') : '',
    ]);
    const widths = [0, 1, 2, 3].map((i) => Math.max(...[['limit', 'value', 'set by', 'holds'], ...rows].map((r) => r[i].length)));
    const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd();
    process.stdout.write(
      [`workspace ${report.workspace_id} (account ${report.account_id})`, line(['limit', 'value', 'set by', 'holds']), ...rows.map(line)].join('\n') + '\n',
    );
  }
} catch (error) {
  if (error instanceof AppError && error.status < 500) {
    fail(`${error.message}${error.details.length ? ` ${error.details.map((d) => `${d.field}: ${d.message}`).join('; ')}` : ''}`, error.status === 400 ? 2 : 1);
  }
  fail(`${(error as Error).name}: ${(error as Error).message} (check AWS credentials and the table name)`);
}
