import { LRUCache } from 'lru-cache';
import type { Db } from '../../shared/clients';
import { WORKSPACE_LIMIT_DEFAULTS } from '../../shared/env';
import { NotFoundError, QuotaExceededError, RateLimitedError, ValidationError } from '../../shared/errors';
import type { Caller } from '../../shared/http';
import { LIMIT_NAMES, LimitOverridesSchema, type CountedLimit, type LimitName, type LimitOverrides, type Limits } from '../../schemas/limits';
import { workspaceKey } from '../../stores/keys';
import {
  COUNT_ATTRIBUTES,
  countDownItem,
  countItemsOf,
  countUpItem,
  findAccountOfWorkspace,
  replaceLimitOverrides,
  type QuotaCheck,
  type WorkspaceLimitFields,
} from '../../stores/limits-store';
import { countRequest } from '../../stores/request-counter-store';
import { getWorkspaceOfAccount, type WorkspaceRecord } from '../../stores/workspace-store';
import { requireWorkspace } from '../tenancy/workspaces';

/** A workspace's limits: the deployment's defaults, with the operator's own for this workspace. */
export const limitsOf = (workspace: WorkspaceLimitFields): Limits => ({ ...WORKSPACE_LIMIT_DEFAULTS, ...workspace.limits });

const NOUNS: Readonly<Record<CountedLimit, string>> = {
  devices: 'devices',
  fleets: 'fleets',
  api_keys: 'API keys that are not revoked',
  integrations: 'integrations',
};

/** The refusal of a create that would take a workspace past a quota. */
export const quotaExceeded = (limit: CountedLimit, max: number) =>
  new QuotaExceededError(limit, max, `The workspace is at its limit of ${max} ${NOUNS[limit]} (limits.${limit} = ${max}).`);

const readAgain = async (db: Db, workspace: WorkspaceRecord) => {
  const fresh = await getWorkspaceOfAccount(db, workspace.account_id, workspace.id);
  if (!fresh) throw new NotFoundError(`Workspace ${workspace.id} not found.`);
  return fresh;
};

/**
 * The part of a create's transaction that counts it against the workspace's quota of `limit`
 * (DESIGN §13): the count on the workspace item goes up by one in the same transaction, only while
 * it is below the limit and the limits are those read, so that concurrent creates never take the
 * workspace past it. A workspace made before the counts existed has its count started here, from
 * what it holds (one Query, once).
 * @throws QuotaExceededError (from its item) when the workspace is full.
 */
export const quota = (db: Db, workspace: WorkspaceRecord, limit: CountedLimit): QuotaCheck => {
  let current = workspace;
  return {
    item: async () => {
      const max = limitsOf(current)[limit];
      const key = workspaceKey(current.account_id, current.id);
      const count = current[COUNT_ATTRIBUTES[limit] as keyof WorkspaceLimitFields] as number | undefined;
      if (count === undefined) {
        const counted = await countItemsOf(db, current.id, limit);
        if (counted >= max) throw quotaExceeded(limit, max);
        return countUpItem(db, key, limit, { max, rev: current.limits_rev, counted });
      }
      if (count >= max) throw quotaExceeded(limit, max);
      return countUpItem(db, key, limit, { max, rev: current.limits_rev });
    },
    failed: async () => {
      current = await readAgain(db, current);
    },
  };
};

/** The part of a revoke's or delete's transaction that gives its place in the quota of `limit` back. */
export const release = (db: Db, workspace: WorkspaceRecord, limit: CountedLimit): QuotaCheck => {
  let current = workspace;
  return {
    item: async () =>
      countDownItem(
        db,
        workspaceKey(current.account_id, current.id),
        limit,
        current[COUNT_ATTRIBUTES[limit] as keyof WorkspaceLimitFields] as number | undefined,
      ),
    failed: async () => {
      current = await readAgain(db, current);
    },
  };
};

/**
 * The workspace's limits, as `GET /workspaces/{id}/limits` answers them.
 * @throws NotFoundError when the workspace is not the caller's.
 */
export const getWorkspaceLimits = async (db: Db, caller: Caller, workspaceId: string) => limitsOf(await requireWorkspace(db, caller, workspaceId));

/**
 * A container's memory of workspaces' limits, for the checks that cannot read them in a
 * transaction of their own (the rate of requests, a device's daily points): each is read at most
 * once per `ttlMs`, so an operator's change applies within that time (LIMITS_CACHE_SECONDS).
 */
export const limitsMemory = (db: Db, { ttlMs, max = 10_000 }: { ttlMs: number; max?: number }) => {
  // The reads themselves are kept, so that many lookups of one workspace at once (a batch's devices)
  // share one read; a failed read is forgotten at once.
  const known = new LRUCache<string, Promise<Limits>>({ max, ttl: Math.max(1, ttlMs), ttlResolution: 0 });
  const read = async (accountId: string, workspaceId: string) => {
    const workspace = await getWorkspaceOfAccount(db, accountId, workspaceId);
    return workspace ? limitsOf(workspace) : WORKSPACE_LIMIT_DEFAULTS;
  };
  return (accountId: string, workspaceId: string): Promise<Limits> => {
    if (ttlMs <= 0) return read(accountId, workspaceId);
    const key = `${accountId}/${workspaceId}`;
    const hit = known.get(key);
    if (hit) return hit;
    const reading = read(accountId, workspaceId);
    known.set(key, reading);
    reading.catch(() => known.delete(key));
    return reading;
  };
};
export type LimitsMemory = ReturnType<typeof limitsMemory>;

/**
 * Admits a request of an API key (or a console session) within its rate, `requests_per_second_per_key`
 * of the key's workspace (a session: the deployment's default), counted per UTC second across every
 * container (one conditional write per admitted request; a refused one writes nothing).
 * @throws RateLimitedError with Retry-After when the caller has used this second's requests.
 */
export const admitRequest = async (db: Db, limits: LimitsMemory, caller: Caller, now = Date.now()) => {
  const rate = caller.workspaceId
    ? (await limits(caller.accountId, caller.workspaceId)).requests_per_second_per_key
    : WORKSPACE_LIMIT_DEFAULTS.requests_per_second_per_key;
  const who = caller.keyId ?? `user:${caller.userId}`;
  if (await countRequest(db, who, Math.floor(now / 1000), rate)) return;
  throw new RateLimitedError(
    'requests_per_second_per_key',
    rate,
    `Too many requests: at most ${rate} per second for ${caller.keyId ? 'this API key' : 'a console session'} (limits.requests_per_second_per_key = ${rate}); retry after a second.`,
    1,
  );
};

/** A workspace's limits as the operator sees them: what applies, which are its own, and its counts. */
export interface WorkspaceLimitsReport {
  workspace_id: string;
  account_id: string;
  limits: Limits;
  /** The limits set for this workspace; the others are the deployment's defaults. */
  own: LimitOverrides;
  /** What the counted quotas hold now (null: not counted yet, a workspace from before the counts until its first create). */
  counts: Record<CountedLimit, number | null>;
}

const report = (workspace: WorkspaceRecord): WorkspaceLimitsReport => ({
  workspace_id: workspace.id,
  account_id: workspace.account_id,
  limits: limitsOf(workspace),
  own: workspace.limits ?? {},
  counts: Object.fromEntries(
    Object.entries(COUNT_ATTRIBUTES).map(([limit, attribute]) => [limit, (workspace[attribute as keyof WorkspaceLimitFields] as number | undefined) ?? null]),
  ) as Record<CountedLimit, number | null>,
});

/** The operator's view of any workspace, found by its ID alone. @throws NotFoundError */
const operatorWorkspace = async (db: Db, workspaceId: string) => {
  const accountId = await findAccountOfWorkspace(db, workspaceId);
  const workspace = accountId && (await getWorkspaceOfAccount(db, accountId, workspaceId));
  if (!workspace) throw new NotFoundError(`Workspace ${workspaceId} not found.`);
  return workspace;
};

/** The limits of any workspace, for the operator (`npm run limits`). @throws NotFoundError */
export const showWorkspaceLimits = async (db: Db, workspaceId: string) => report(await operatorWorkspace(db, workspaceId));

const MAX_CHANGE_ATTEMPTS = 5;

/**
 * Sets some of a workspace's limits (`set`) and returns others to the deployment's defaults
 * (`reset`), for the operator. A quota lowered below what the workspace holds refuses further
 * creates; nothing already there is removed.
 * @throws ValidationError naming each bad value; NotFoundError for an unknown workspace.
 */
export const changeWorkspaceLimits = async (db: Db, workspaceId: string, change: { set?: Record<string, unknown>; reset?: string[] }) => {
  const parsed = LimitOverridesSchema.safeParse(change.set ?? {});
  const unknown = (change.reset ?? []).filter((name) => !(LIMIT_NAMES as readonly string[]).includes(name));
  const details = [
    ...(parsed.success
      ? []
      : parsed.error.issues.map((issue) => ({
          field: issue.path.length ? issue.path.join('.') : 'set',
          message: issue.code === 'unrecognized_keys' ? `Unknown limits: ${issue.keys.join(', ')}; known: ${LIMIT_NAMES.join(', ')}.` : issue.message,
        }))),
    ...unknown.map((name) => ({ field: name, message: `Unknown limit; known: ${LIMIT_NAMES.join(', ')}.` })),
  ];
  if (details.length || !parsed.success) throw new ValidationError(`Invalid limits: ${details.map((d) => d.field).join(', ')}.`, { details });
  for (let attempt = 0; attempt < MAX_CHANGE_ATTEMPTS; attempt++) {
    const workspace = await operatorWorkspace(db, workspaceId);
    const own: LimitOverrides = { ...workspace.limits, ...parsed.data };
    for (const name of change.reset ?? []) delete own[name as LimitName];
    if (await replaceLimitOverrides(db, workspace.account_id, workspace.id, own, workspace.limits_rev)) return report(await operatorWorkspace(db, workspaceId));
  }
  throw new Error(`The limits of workspace ${workspaceId} kept changing meanwhile; run the command again.`);
};
