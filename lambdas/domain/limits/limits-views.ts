import type * as z from 'zod';
import type { Db } from '../../shared/clients';
import { NotFoundError, ValidationError } from '../../shared/errors';
import type { Caller } from '../../shared/http';
import {
  ACCOUNT_LIMIT_NAMES,
  AccountLimitOverridesSchema,
  COUNTED_LIMITS,
  DAILY_LIMITS,
  WORKSPACE_LIMIT_NAMES,
  WorkspaceLimitOverridesSchema,
  type AccountLimitOverrides,
  type Limits,
  type QuotaName,
  type WorkspaceLimitOverrides,
} from '../../schemas/limits';
import { dayOf } from '../../schemas/usage';
import { accountKey, workspaceKey } from '../../stores/keys';
import {
  COUNT_ATTRIBUTES,
  findAccountOfWorkspace,
  quotaField,
  getAccountLimitFields,
  replaceLimitOverrides,
  type AccountLimitsRecord,
} from '../../stores/limits-store';
import { getWorkspaceOfAccount, type WorkspaceRecord } from '../../stores/workspace-store';
import { requireWorkspace } from '../tenancy/workspaces';
import { limitsOf } from './limits';

/**
 * The workspace's limits, its account's included, as `GET /workspaces/{id}/limits` answers them.
 * @throws NotFoundError when the workspace is not the caller's.
 */
export const getWorkspaceLimits = async (db: Db, caller: Caller, workspaceId: string) => {
  const workspace = await requireWorkspace(db, caller, workspaceId);
  return limitsOf(workspace, await getAccountLimitFields(db, workspace.account_id));
};

/**
 * The workspace's limits and, beside each quota, what it holds now (`used`), as
 * `GET /workspaces/{id}/limits` answers them. @throws NotFoundError when the workspace is not the caller's.
 */
export const getWorkspaceLimitsAndUse = async (db: Db, caller: Caller, workspaceId: string, now = Date.now()) => {
  const workspace = await requireWorkspace(db, caller, workspaceId);
  const account = await getAccountLimitFields(db, workspace.account_id);
  return {
    limits: limitsOf(workspace, account),
    used: { ...countsOf(workspace, [...COUNTED_LIMITS, ...DAILY_LIMITS], now), ...countsOf(account ?? {}, ACCOUNT_LIMIT_NAMES, now) },
  };
};

/** What a quota holds now (null: not counted yet, a holder from before that count until its first create); a quota per day: today's. */
const countsOf = (fields: object, names: readonly QuotaName[], now: number) =>
  Object.fromEntries(
    names.map((name) => {
      const { count, day } = COUNT_ATTRIBUTES[name];
      const stored = quotaField(fields, count) as number | undefined;
      if (day) return [name, quotaField(fields, day) === dayOf(now) ? (stored ?? 0) : 0];
      return [name, stored ?? null];
    }),
  ) as Record<QuotaName, number | null>;

/** A workspace's limits as the operator sees them: what applies, which are its own, which its account's, and its counts. */
export interface WorkspaceLimitsReport {
  workspace_id: string;
  account_id: string;
  limits: Limits;
  /** The limits set for this workspace. */
  own: WorkspaceLimitOverrides;
  /** The limits set for its account; the others are the deployment's defaults. */
  account_own: AccountLimitOverrides;
  /** What the quotas hold now (see countsOf), the account's workspaces included. */
  counts: Partial<Record<QuotaName, number | null>>;
}

/** An account's limits as the operator sees them. */
export interface AccountLimitsReport {
  account_id: string;
  limits: Pick<Limits, (typeof ACCOUNT_LIMIT_NAMES)[number]>;
  own: AccountLimitOverrides;
  counts: Partial<Record<QuotaName, number | null>>;
}

const workspaceReport = (workspace: WorkspaceRecord, account: AccountLimitsRecord | undefined, now: number): WorkspaceLimitsReport => ({
  workspace_id: workspace.id,
  account_id: workspace.account_id,
  limits: limitsOf(workspace, account),
  own: workspace.limits ?? {},
  account_own: account?.limits ?? {},
  counts: { ...countsOf(workspace, [...COUNTED_LIMITS, ...DAILY_LIMITS], now), ...countsOf(account ?? {}, ACCOUNT_LIMIT_NAMES, now) },
});

const accountReport = (account: AccountLimitsRecord, now: number): AccountLimitsReport => {
  const limits = limitsOf({}, account);
  return {
    account_id: account.id,
    limits: Object.fromEntries(ACCOUNT_LIMIT_NAMES.map((name) => [name, limits[name]])) as AccountLimitsReport['limits'],
    own: account.limits ?? {},
    counts: countsOf(account, ACCOUNT_LIMIT_NAMES, now),
  };
};

/** The operator's view of any workspace, found by its ID alone. @throws NotFoundError */
const operatorWorkspace = async (db: Db, workspaceId: string) => {
  const accountId = await findAccountOfWorkspace(db, workspaceId);
  const workspace = accountId && (await getWorkspaceOfAccount(db, accountId, workspaceId));
  if (!workspace) throw new NotFoundError(`Workspace ${workspaceId} not found.`);
  return workspace;
};

const operatorAccount = async (db: Db, accountId: string) => {
  const account = await getAccountLimitFields(db, accountId);
  if (!account) throw new NotFoundError(`Account ${accountId} not found.`);
  return account;
};

/** The limits of any workspace, for the operator (`fleetstream limits`). @throws NotFoundError */
export const showWorkspaceLimits = async (db: Db, workspaceId: string, now = Date.now()) => {
  const workspace = await operatorWorkspace(db, workspaceId);
  return workspaceReport(workspace, await getAccountLimitFields(db, workspace.account_id), now);
};

/** The limits of any account, for the operator (`fleetstream limits --account`). @throws NotFoundError */
export const showAccountLimits = async (db: Db, accountId: string, now = Date.now()) => accountReport(await operatorAccount(db, accountId), now);

/** What a change asks: limits to set, and limits to give back to the deployment's defaults. */
export interface LimitsChange {
  set?: Record<string, unknown>;
  reset?: string[];
}

/**
 * Reads a change of the limits of one kind of holder (`names`, read by `schema`); a limit of the
 * other kind (`elsewhere`, said by `where`) is refused naming where it is set.
 * @throws ValidationError naming each bad value.
 */
const parseChange = <T extends object>(
  schema: z.ZodType<T>,
  names: readonly string[],
  { set = {}, reset = [] }: LimitsChange,
  elsewhere: { names: readonly string[]; where: string },
) => {
  const nameIssue = (name: string) =>
    elsewhere.names.includes(name) ? `${name} is ${elsewhere.where}.` : `Unknown limit ${name}; known: ${names.join(', ')}.`;
  const parsed = schema.safeParse(set);
  const details = [
    ...(parsed.success
      ? []
      : parsed.error.issues.flatMap((issue) =>
          issue.code === 'unrecognized_keys'
            ? issue.keys.map((name) => ({ field: name, message: nameIssue(name) }))
            : [{ field: issue.path.length ? issue.path.join('.') : 'set', message: issue.message }],
        )),
    ...reset.filter((name) => !names.includes(name)).map((name) => ({ field: name, message: nameIssue(name) })),
  ];
  if (details.length || !parsed.success) throw new ValidationError(`Invalid limits: ${details.map((d) => d.field).join(', ')}.`, { details });
  return { set: parsed.data, reset };
};

const MAX_CHANGE_ATTEMPTS = 5;

/** Writes a holder's new own limits over those it read, reading again while they change meanwhile. */
const changeOwn = async <H extends { limits?: object; limits_rev?: number }>(
  db: Db,
  read: () => Promise<H>,
  keyOf: (holder: H) => ReturnType<typeof workspaceKey>,
  { set, reset }: { set: object; reset: string[] },
  what: string,
) => {
  for (let attempt = 0; attempt < MAX_CHANGE_ATTEMPTS; attempt++) {
    const holder = await read();
    const own: Record<string, unknown> = { ...holder.limits, ...set };
    for (const name of reset) delete own[name];
    if (await replaceLimitOverrides(db, keyOf(holder), own, holder.limits_rev)) return;
  }
  throw new Error(`The limits of ${what} kept changing meanwhile; run the command again.`);
};

/**
 * Sets some of a workspace's limits (`set`) and returns others to the deployment's defaults
 * (`reset`), for the operator. A quota lowered below what the workspace holds refuses further
 * creates; nothing already there is removed.
 * @throws ValidationError naming each bad value (an account's limit named where it is set); NotFoundError for an unknown workspace.
 */
export const changeWorkspaceLimits = async (db: Db, workspaceId: string, change: LimitsChange) => {
  const parsed = parseChange(WorkspaceLimitOverridesSchema, WORKSPACE_LIMIT_NAMES, change, {
    names: ACCOUNT_LIMIT_NAMES,
    where: 'the account’s limit, not the workspace’s: change it on the account',
  });
  await changeOwn(
    db,
    () => operatorWorkspace(db, workspaceId),
    (w) => workspaceKey(w.account_id, w.id),
    parsed,
    `workspace ${workspaceId}`,
  );
  return showWorkspaceLimits(db, workspaceId);
};

/**
 * Sets some of an account's limits (`workspaces_per_account`) or returns them to the deployment's
 * defaults, for the operator. A quota lowered below what the account holds refuses further creates.
 * @throws ValidationError naming each bad value (a workspace's limit named where it is set); NotFoundError for an unknown account.
 */
export const changeAccountLimits = async (db: Db, accountId: string, change: LimitsChange) => {
  const parsed = parseChange(AccountLimitOverridesSchema, ACCOUNT_LIMIT_NAMES, change, {
    names: WORKSPACE_LIMIT_NAMES,
    where: 'a workspace’s limit, not the account’s: change it on a workspace',
  });
  await changeOwn(
    db,
    () => operatorAccount(db, accountId),
    (a) => accountKey(a.id),
    parsed,
    `account ${accountId}`,
  );
  return showAccountLimits(db, accountId);
};
