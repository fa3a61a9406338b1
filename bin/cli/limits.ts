/**
 * Shows or changes one workspace's limits, for the operator: against the running `npm start`
 * (`--local`) or a deployed stack (its registry table), like create-account.
 *
 *   fleetstream limits --workspace wks-… --local                                  # print them
 *   fleetstream limits --workspace wks-… --local --set devices=5 --set fleets=2   # set some (--reset devices: back to the default)
 *   REGISTRY_TABLE=<RegistryTableName output> fleetstream limits --workspace wks-… --set points_per_device_per_day=50000
 */
import { readFileSync } from 'node:fs';
import type { LocalOptions } from '../commands/options';
import { findRuntime } from '../../local/runtime-file';

/** `limits`' options: the workspace, what to change (`--set name=value` as name and value), which stack. */
export interface LimitsOptions extends LocalOptions {
  workspace: string;
  set?: Record<string, unknown>;
  reset?: string[];
  json?: boolean;
  table?: string;
}

const fail = (message: string, code = 1): never => {
  process.stderr.write(`limits: ${message}\n`);
  process.exit(code);
};

/**
 * Prints the workspace's limits (a table, or JSON), after the changes asked for. A limit the
 * domain refuses exits 2, as a bad argument; an unknown workspace or a failed call, 1.
 */
export const workspaceLimits = async (options: LimitsOptions) => {
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
  const { changeWorkspaceLimits, showWorkspaceLimits } = await import('../../lambdas/domain/limits/limits');
  const { registryDb } = await import('../../lambdas/shared/clients');
  const { AppError } = await import('../../lambdas/shared/errors');
  const { LIMIT_NAMES } = await import('../../lambdas/schemas/limits');

  try {
    const { set = {}, reset = [] } = options;
    const changing = Object.keys(set).length > 0 || reset.length > 0;
    const report = changing
      ? await changeWorkspaceLimits(registryDb(), options.workspace, { set, reset })
      : await showWorkspaceLimits(registryDb(), options.workspace);
    if (options.json) {
      process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    } else {
      const rows = LIMIT_NAMES.map((name) => [
        name,
        String(report.limits[name]),
        name in report.own ? 'workspace' : 'default',
        name in report.counts ? String(report.counts[name as keyof typeof report.counts] ?? 'not counted yet') : '',
      ]);
      const widths = [0, 1, 2, 3].map((i) => Math.max(...[['limit', 'value', 'set by', 'holds'], ...rows].map((r) => r[i].length)));
      const line = (cells: string[]) =>
        cells
          .map((c, i) => c.padEnd(widths[i]))
          .join('  ')
          .trimEnd();
      process.stdout.write(
        `${[`workspace ${report.workspace_id} (account ${report.account_id})`, line(['limit', 'value', 'set by', 'holds']), ...rows.map(line)].join('\n')}\n`,
      );
    }
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
