/**
 * Shows or changes one workspace's limits, or one account's, for the operator: against the running
 * `npm start` (`--local`) or a deployed stack (its registry table), like create-account.
 *
 *   fleetstream limits --workspace wks-… --local                                  # print them
 *   fleetstream limits --workspace wks-… --local --set devices=5 --set fleets=2   # set some (--reset devices: back to the default)
 *   fleetstream limits --account acc-… --local --set workspaces_per_account=3     # an account's own
 *   REGISTRY_TABLE=<RegistryTableName output> fleetstream limits --workspace wks-… --set points_per_device_per_day=50000
 */
import { readFileSync } from 'node:fs';
import type { LocalOptions } from '../commands/options';
import { findRuntime } from '../../local/runtime-file';

/** `limits`' options: whose limits, what to change (`--set name=value` as name and value), which stack. */
export interface LimitsOptions extends LocalOptions {
  workspace?: string;
  account?: string;
  set?: Record<string, unknown>;
  reset?: string[];
  json?: boolean;
  table?: string;
}

const fail = (message: string, code = 1): never => {
  process.stderr.write(`limits: ${message}\n`);
  process.exit(code);
};

/** The report's table: each limit, its value, who set it, and what its quota holds now. */
const table = (title: string, rows: string[][]) => {
  const header = ['limit', 'value', 'set by', 'holds'];
  const widths = header.map((_, i) => Math.max(...[header, ...rows].map((r) => r[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  return `${[title, line(header), ...rows.map(line)].join('\n')}\n`;
};

/**
 * Prints the limits (a table, or JSON), after the changes asked for. A limit the domain refuses
 * exits 2, as a bad argument; an unknown workspace or account, or a failed call, 1.
 */
export const showOrChangeLimits = async (options: LimitsOptions) => {
  if (options.local) {
    try {
      Object.assign(process.env, findRuntime(options.dataDir, options.port).env);
    } catch (error) {
      fail((error as Error).message);
    }
  } else if (options.table) {
    process.env.REGISTRY_TABLE = options.table;
  }
  // A deployed stack's defaults are its deploy context's: this project's cdk.json, unless given as the stack gives them.
  if (!options.local && !process.env.WORKSPACE_LIMIT_DEFAULTS) {
    const context = (JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as { context?: { limits?: unknown } }).context;
    if (context?.limits) process.env.WORKSPACE_LIMIT_DEFAULTS = JSON.stringify(context.limits);
  }

  // Imported after the environment is set: the registry and the defaults are read once.
  const views = await import('../../lambdas/domain/limits/limits-views');
  const { registryDb } = await import('../../lambdas/shared/clients');
  const { AppError } = await import('../../lambdas/shared/errors');
  const { ACCOUNT_LIMIT_NAMES, LIMIT_NAMES } = await import('../../lambdas/schemas/limits');

  try {
    const { set = {}, reset = [] } = options;
    const change = Object.keys(set).length > 0 || reset.length > 0 ? { set, reset } : undefined;
    const holds = (counts: Record<string, number | null | undefined>, name: string) => (name in counts ? String(counts[name] ?? 'not counted yet') : '');
    if (options.account) {
      const report = change
        ? await views.changeAccountLimits(registryDb(), options.account, change)
        : await views.showAccountLimits(registryDb(), options.account);
      if (options.json) return void process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      const rows = ACCOUNT_LIMIT_NAMES.map((name) => [
        name,
        String(report.limits[name]),
        name in report.own ? 'account' : 'default',
        holds(report.counts, name),
      ]);
      return void process.stdout.write(table(`account ${report.account_id}`, rows));
    }
    const workspace = options.workspace!;
    const report = change ? await views.changeWorkspaceLimits(registryDb(), workspace, change) : await views.showWorkspaceLimits(registryDb(), workspace);
    if (options.json) return void process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    const setBy = (name: string) => (name in report.own ? 'workspace' : name in report.account_own ? 'account' : 'default');
    const rows = LIMIT_NAMES.map((name) => [name, String(report.limits[name]), setBy(name), holds(report.counts, name)]);
    process.stdout.write(table(`workspace ${report.workspace_id} (account ${report.account_id})`, rows));
  } catch (error) {
    if (error instanceof AppError && error.status < 500) {
      fail(
        `${error.message}${error.details.length ? ` ${error.details.map((d) => `${d.field}: ${d.message}`).join('; ')}` : ''}`,
        error.status === 400 ? 2 : 1,
      );
    }
    fail(`${(error as Error).name}: ${(error as Error).message} (check AWS credentials and the table name)`);
  }
};
