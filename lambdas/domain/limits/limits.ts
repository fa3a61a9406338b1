import { LRUCache } from 'lru-cache';
import type { Db } from '../../shared/clients';
import { WORKSPACE_LIMIT_DEFAULTS } from '../../shared/env';
import { NotFoundError, QuotaExceededError, RateLimitedError } from '../../shared/errors';
import type { Caller } from '../../shared/http';
import type { AccountLimitName, CountedLimit, DailyLimit, DeviceLimit, Limits, QuotaName } from '../../schemas/limits';
import { dayOf } from '../../schemas/usage';
import { accountKey, workspaceKey, type ItemKey } from '../../stores/keys';
import {
  COUNT_ATTRIBUTES,
  countDownItem,
  countItemsOf,
  countUpItem,
  getAccountLimitFields,
  type AccountLimitFields,
  type AccountLimitsRecord,
  type CountFound,
  type HeldQuota,
  type QuotaCheck,
  quotaField,
  type QuotaFields,
  type WorkspaceLimitFields,
} from '../../stores/limits-store';
import { countRequest } from '../../stores/request-counter-store';
import { getWorkspaceOfAccount, type WorkspaceRecord } from '../../stores/workspace-store';

/** A workspace's limits: the deployment's defaults, with the operator's own for this workspace and for its account. */
export const limitsOf = (workspace: WorkspaceLimitFields, account?: AccountLimitFields): Limits => ({
  ...WORKSPACE_LIMIT_DEFAULTS,
  ...workspace.limits,
  ...account?.limits,
});

const DAY_MS = 24 * 3600 * 1000;

/** Whole seconds from `at` (ms since the epoch) to the next midnight UTC, when every daily quota starts afresh: a refusal's Retry-After. */
export const secondsToMidnightUtc = (at: number) => Math.max(1, Math.ceil(((Math.floor(at / DAY_MS) + 1) * DAY_MS - at) / 1000));

// What each quota's refusal says, after "The workspace is at its limit of <max>" (or "has …").
const REFUSALS: Readonly<Record<QuotaName | DeviceLimit, (max: number) => string>> = {
  devices: (max) => `The workspace is at its limit of ${max} devices`,
  fleets: (max) => `The workspace is at its limit of ${max} fleets`,
  api_keys: (max) => `The workspace is at its limit of ${max} API keys that are not revoked`,
  integrations: (max) => `The workspace is at its limit of ${max} integrations`,
  identities: (max) => `The workspace is at its limit of ${max} device identities that are not revoked`,
  firmware_versions: (max) => `The workspace is at its limit of ${max} firmware versions`,
  groups: (max) => `The workspace is at its limit of ${max} groups`,
  alarm_rules: (max) => `The workspace is at its limit of ${max} alarm rules`,
  exports_per_day: (max) => `The workspace has started its limit of ${max} exports today`,
  rollouts_per_day: (max) => `The workspace has started its limit of ${max} rollouts today`,
  workspaces_per_account: (max) => `The account is at its limit of ${max} workspaces`,
  points_per_device_per_day: (max) => `The device has stored its limit of ${max} data points today`,
  events_per_device_per_day: (max) => `The device has reported its limit of ${max} events today`,
  up_messages_per_device_per_day: (max) => `The device has sent its limit of ${max} messages today`,
};

const DAILY: ReadonlySet<string> = new Set<DailyLimit | DeviceLimit>([
  'exports_per_day',
  'rollouts_per_day',
  'points_per_device_per_day',
  'events_per_device_per_day',
  'up_messages_per_device_per_day',
]);

/**
 * The refusal of what would take a workspace, an account or a device past a quota: 429
 * `quota_exceeded` naming the limit and its value; a quota per UTC day says when it starts afresh
 * (Retry-After: the seconds to midnight UTC).
 */
export const quotaExceeded = (limit: QuotaName | DeviceLimit, max: number, at = Date.now()) => {
  const daily = DAILY.has(limit);
  const message = `${REFUSALS[limit](max)} (limits.${limit} = ${max})${daily ? '; it starts afresh at midnight UTC' : ''}.`;
  return new QuotaExceededError(limit, max, message, daily ? { retryAfterSeconds: secondsToMidnightUtc(at) } : {});
};

/** What holds a quota's count (a workspace's item, an account's), as last read. */
interface QuotaHolder {
  id: string;
  key: ItemKey;
  fields: QuotaFields;
  limits: Limits;
}

const workspaceHolder = (workspace: WorkspaceRecord): QuotaHolder => ({
  id: workspace.id,
  key: workspaceKey(workspace.account_id, workspace.id),
  fields: workspace,
  limits: limitsOf(workspace),
});

const accountHolder = (account: AccountLimitsRecord): QuotaHolder => ({
  id: account.id,
  key: accountKey(account.id),
  fields: account,
  limits: limitsOf({}, account),
});

const workspaceAgain = async (db: Db, workspace: WorkspaceRecord) => {
  const fresh = await getWorkspaceOfAccount(db, workspace.account_id, workspace.id);
  // Being deleted: it takes nothing more.
  if (!fresh || fresh.deleting_at !== undefined) throw new NotFoundError(`Workspace ${workspace.id} not found.`);
  return fresh;
};

const accountAgain = async (db: Db, accountId: string) => {
  const fresh = await getAccountLimitFields(db, accountId);
  if (!fresh) throw new NotFoundError(`Account ${accountId} not found.`);
  return fresh;
};

/**
 * How much of `limit` the holder has used, and how its count is found on its item: a count per day
 * counts the latest day its item knows (never an earlier one again, whatever this container's
 * clock says); a count that is not there yet is counted from what the holder holds (one Query, once).
 */
const usedOf = async (db: Db, holder: QuotaHolder, limit: QuotaName, now: number): Promise<{ used: number; found: CountFound; today: string }> => {
  const { count, day } = COUNT_ATTRIBUTES[limit];
  const stored = quotaField(holder.fields, count);
  if (day) {
    const counted = quotaField(holder.fields, day) as string | undefined;
    const today = counted !== undefined && counted > dayOf(now) ? counted : dayOf(now);
    return counted === today ? { used: Number(stored ?? 0), found: { kind: 'counting' }, today } : { used: 0, found: { kind: 'new-day' }, today };
  }
  if (stored !== undefined) return { used: Number(stored), found: { kind: 'counting' }, today: dayOf(now) };
  const counted = await countItemsOf(db, holder.id, limit as HeldQuota);
  return { used: counted, found: { kind: 'start', counted }, today: dayOf(now) };
};

/**
 * The part of a create's transaction that counts it against a quota of its holder (DESIGN §13):
 * the count on the holder's item goes up by one in the same transaction, only while it is below the
 * limit and the limits are those read, so that concurrent creates never take the holder past it.
 * A holder made before the count existed has it started here, from what it holds.
 */
const countUp = (db: Db, first: QuotaHolder, again: () => Promise<QuotaHolder>, limit: QuotaName, now: () => number): QuotaCheck => {
  let current = first;
  return {
    item: async () => {
      const max = current.limits[limit];
      const at = now();
      const { used, found, today } = await usedOf(db, current, limit, at);
      if (used >= max) throw quotaExceeded(limit, max, at);
      return countUpItem(db, current.key, limit, { max, rev: current.fields.limits_rev, found, today });
    },
    failed: async () => {
      current = await again();
    },
  };
};

/**
 * The part of a create's transaction that counts it against the workspace's quota of `limit`: what
 * it holds (devices, fleets, keys, integrations, identities, firmware versions, groups, alarm rules), or what it starts
 * per UTC day (exports, rollouts).
 * @throws QuotaExceededError (from its item) when the workspace is full.
 */
export const quota = (db: Db, workspace: WorkspaceRecord, limit: CountedLimit | DailyLimit, now = Date.now): QuotaCheck => {
  let current = workspace;
  return countUp(db, workspaceHolder(workspace), async () => workspaceHolder((current = await workspaceAgain(db, current))), limit, now);
};

/**
 * The part of a workspace create's transaction that counts it against its account's quota of
 * `limit` (`workspaces_per_account`), on the account item.
 * @throws QuotaExceededError (from its item) when the account is full; NotFoundError when there is no such account.
 */
export const accountQuota = async (db: Db, accountId: string, limit: AccountLimitName): Promise<QuotaCheck> =>
  countUp(db, accountHolder(await accountAgain(db, accountId)), async () => accountHolder(await accountAgain(db, accountId)), limit, Date.now);

/** The part of a revoke's or delete's transaction that gives its place in the quota of `limit` back. */
export const release = (db: Db, workspace: WorkspaceRecord, limit: CountedLimit): QuotaCheck => {
  let current = workspace;
  return {
    item: async () =>
      countDownItem(db, workspaceKey(current.account_id, current.id), limit, quotaField(current, COUNT_ATTRIBUTES[limit].count) as number | undefined),
    failed: async () => {
      current = await workspaceAgain(db, current);
    },
  };
};

/**
 * A container's memory of workspaces' limits, for the checks that cannot read them in a
 * transaction of their own (the rate of requests, a device's daily quotas): each is read at most
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
