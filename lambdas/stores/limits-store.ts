import { GetCommand, QueryCommand, TransactWriteCommand, UpdateCommand, type QueryCommandOutput } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import { ThrottledError } from '../shared/errors';
import type { AccountLimitOverrides, CountedLimit, QuotaName, WorkspaceLimitOverrides } from '../schemas/limits';
import { failedConditions, isConditionFailed } from './errors';
import { strip } from './items';
import { accountKey, collection, type ItemKey } from './keys';

/**
 * Where each quota's count lives on the item that holds it (the workspace's; the account's for
 * `workspaces_per_account`): `count`, and for a quota per UTC day, `day`, the day it counts.
 */
export const COUNT_ATTRIBUTES: Readonly<Record<QuotaName, { count: string; day?: string }>> = {
  devices: { count: 'devices_count' },
  fleets: { count: 'fleets_count' },
  api_keys: { count: 'api_keys_count' },
  integrations: { count: 'integrations_count' },
  identities: { count: 'identities_count' },
  firmware_versions: { count: 'firmware_versions_count' },
  groups: { count: 'groups_count' },
  alarm_rules: { count: 'alarm_rules_count' },
  exports_per_day: { count: 'exports_today', day: 'exports_day' },
  rollouts_per_day: { count: 'rollouts_today', day: 'rollouts_day' },
  workspaces_per_account: { count: 'workspaces_count' },
};

/**
 * What an item that holds quotas keeps for them: the count of each (absent on items made before
 * that count existed, until their first create), the operator's own limits, and how many times
 * those were changed (absent: never), which a creating transaction checks has not moved.
 */
export interface QuotaFields {
  limits?: object;
  limits_rev?: number;
}

/** One of a holder's quota attributes (a count, the day it counts), as read. */
export const quotaField = (fields: object, attribute: string) => (fields as Record<string, unknown>)[attribute] as number | string | undefined;

/** What the workspace item holds for its limits. */
export interface WorkspaceLimitFields extends QuotaFields {
  devices_count?: number;
  fleets_count?: number;
  api_keys_count?: number;
  integrations_count?: number;
  identities_count?: number;
  firmware_versions_count?: number;
  groups_count?: number;
  alarm_rules_count?: number;
  exports_day?: string;
  exports_today?: number;
  rollouts_day?: string;
  rollouts_today?: number;
  limits?: WorkspaceLimitOverrides;
}

/** What the account item holds for its limits. */
export interface AccountLimitFields extends QuotaFields {
  workspaces_count?: number;
  limits?: AccountLimitOverrides;
}

/** One item of a TransactWriteItems call. */
export type TransactItem = NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']>[number];

/** The counts of a new workspace: its default fleet, and the API key created with it when there is one. */
export const initialCounts = (apiKeys: number) =>
  ({
    devices_count: 0,
    fleets_count: 1,
    api_keys_count: apiKeys,
    integrations_count: 0,
    identities_count: 0,
    firmware_versions_count: 0,
    groups_count: 0,
    alarm_rules_count: 0,
  }) satisfies WorkspaceLimitFields;

/** The counts of a new account: its first workspace. */
export const initialAccountCounts = () => ({ workspaces_count: 1 }) satisfies AccountLimitFields;

// The limits a transaction read are the ones still stored: none changed since (or never set).
const limitsStill = (rev: number | undefined) =>
  rev === undefined ? { expression: 'attribute_not_exists(limits_rev)', values: {} } : { expression: 'limits_rev = :rev', values: { ':rev': rev } };

/** How a create finds the count it adds to, on the item as read. */
export type CountFound =
  /** The count is there (a quota per day: it counts `today`). */
  | { kind: 'counting' }
  /** The item has no count yet: `counted` is what the caller found the holder holds. */
  | { kind: 'start'; counted: number }
  /** A quota per day whose count is of an earlier day (or none): it starts afresh at one. */
  | { kind: 'new-day' };

/**
 * A transaction item that adds one to the count of `limit` on the item at `key`, provided the
 * count stays within `max` and the item's limits are still those of `rev`. How the count is found
 * on the item as read (`found`) is checked to hold still: a count started meanwhile, or a day
 * counted meanwhile, fails the condition and the caller reads again.
 */
export const countUpItem = (
  db: Db,
  key: ItemKey,
  limit: QuotaName,
  { max, rev, found, today }: { max: number; rev?: number; found: CountFound; today?: string },
): TransactItem => {
  const still = limitsStill(rev);
  const { count, day } = COUNT_ATTRIBUTES[limit];
  const names = { '#count': count, ...(day ? { '#day': day } : {}) };
  const update = (UpdateExpression: string, condition: string, values: Record<string, unknown>): TransactItem => ({
    Update: {
      TableName: db.table,
      Key: key,
      UpdateExpression,
      // A workspace being deleted counts nothing more (stores/workspace-deletion-store.ts).
      ConditionExpression: `attribute_exists(pk) AND attribute_not_exists(deleting_at) AND ${condition} AND ${still.expression}`,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: { ...values, ...still.values },
    },
  });
  if (day) {
    // Days are YYYY-MM-DD: text order is time order.
    return found.kind === 'new-day'
      ? update('SET #day = :today, #count = :one', '(attribute_not_exists(#day) OR #day < :today)', { ':today': today, ':one': 1 })
      : update('ADD #count :one', '#day = :today AND #count < :max', { ':today': today, ':one': 1, ':max': max });
  }
  return found.kind === 'start'
    ? update('SET #count = :count', 'attribute_not_exists(#count)', { ':count': found.counted + 1 })
    : update('ADD #count :one', '#count < :max', { ':one': 1, ':max': max });
};

/**
 * A transaction item that takes one from a workspace's count of `limit` (a revoke, a delete),
 * given the count read: on a workspace that has no count yet (undefined) it only checks that it
 * still has none (its first create will count what is left), and a count already at zero (items
 * written around the counts, such as a test's) stays there.
 */
export const countDownItem = (db: Db, key: ItemKey, limit: CountedLimit, count: number | undefined): TransactItem => {
  const names = { '#count': COUNT_ATTRIBUTES[limit].count };
  if (count === undefined)
    return { ConditionCheck: { TableName: db.table, Key: key, ConditionExpression: 'attribute_not_exists(#count)', ExpressionAttributeNames: names } };
  if (count <= 0)
    return {
      ConditionCheck: {
        TableName: db.table,
        Key: key,
        ConditionExpression: '#count <= :zero',
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: { ':zero': 0 },
      },
    };
  return {
    Update: {
      TableName: db.table,
      Key: key,
      UpdateExpression: 'ADD #count :minus',
      ConditionExpression: '#count > :zero',
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: { ':minus': -1, ':zero': 0 },
    },
  };
};

/** The quotas that count what their holder holds (not per day): a workspace's, and the account's workspaces. */
export type HeldQuota = CountedLimit | 'workspaces_per_account';

const NOT_REVOKED = 'attribute_not_exists(revoked_at) OR attribute_type(revoked_at, :null)';

// What each quota counts in its holder's partition: keys and identities only until they are revoked.
const COUNTED: Readonly<Record<HeldQuota, { prefix: (holderId: string) => { pk: string; prefix: string }; filter?: string }>> = {
  devices: { prefix: collection.devicesOfWorkspace },
  fleets: { prefix: collection.fleetsOfWorkspace },
  api_keys: { prefix: collection.apiKeysOfWorkspace, filter: NOT_REVOKED },
  integrations: { prefix: collection.integrationsOfWorkspace },
  identities: { prefix: collection.identitiesOfWorkspace, filter: NOT_REVOKED },
  firmware_versions: { prefix: collection.firmwaresOfWorkspace },
  groups: { prefix: collection.groupsOfWorkspace },
  alarm_rules: { prefix: collection.alarmRulesOfWorkspace },
  workspaces_per_account: { prefix: collection.workspacesOfAccount },
};

/**
 * How many of what `limit` counts its holder (the workspace, or for `workspaces_per_account` the
 * account) holds, counted item by item (Select COUNT, page by page): the first create on a holder
 * made before the count existed starts its count here.
 */
export const countItemsOf = async (db: Db, holderId: string, limit: HeldQuota) => {
  const { prefix, filter } = COUNTED[limit];
  const { pk, prefix: sk } = prefix(holderId);
  let total = 0;
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page: QueryCommandOutput = await db.doc.send(
      new QueryCommand({
        TableName: db.table,
        ConsistentRead: true,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': pk, ':prefix': sk, ...(filter ? { ':null': 'NULL' } : {}) },
        ...(filter ? { FilterExpression: filter } : {}),
        Select: 'COUNT',
        ExclusiveStartKey,
      }),
    );
    total += page.Count ?? 0;
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return total;
};

/** A quota's part in a creating (or deleting) transaction; `quota` of domain/limits.ts makes it. */
export interface QuotaCheck {
  /** The transaction item, from its holder (the workspace, the account) as last read. @throws QuotaExceededError when the holder is full. */
  item: () => Promise<TransactItem>;
  /** Its condition failed (the count, the limits or the holder changed): reads the holder again. */
  failed: () => Promise<void>;
}

const MAX_ATTEMPTS = 8;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const isTransactionConflict = (error: unknown) =>
  (error as { name?: string })?.name === 'TransactionCanceledException' &&
  ((error as { CancellationReasons?: Array<{ Code?: string }> }).CancellationReasons ?? []).some((r) => r.Code === 'TransactionConflict');

/**
 * Runs a transaction of `items` with a quota's item last, until it commits: when the quota's
 * condition fails (another create took the last place, the operator changed the limits, the count
 * was started meanwhile) or another transaction held an item, it is built again from a fresh read,
 * with a short jittered backoff; the quota's own check refuses a full workspace.
 * @returns undefined once committed, or the indexes of `items` whose conditions failed (nothing written).
 * @throws QuotaExceededError from the quota; ThrottledError when it never commits.
 */
export const transactWithQuota = async (db: Db, items: TransactItem[], quota: QuotaCheck): Promise<number[] | undefined> => {
  for (let i = 0; i < MAX_ATTEMPTS; i++) {
    if (i) await pause(Math.random() * Math.min(200, 10 * 2 ** i));
    const check = await quota.item();
    try {
      await db.doc.send(new TransactWriteCommand({ TransactItems: [...items, check] }));
      return undefined;
    } catch (error) {
      const failed = failedConditions(error);
      const own = failed?.filter((index) => index < items.length);
      if (own?.length) return own;
      if (failed) await quota.failed();
      else if (!isTransactionConflict(error)) throw error;
    }
  }
  throw new ThrottledError('The workspace is busy; retry the request.');
};

/**
 * Replaces the operator's limits on the item at `key` (a workspace's, an account's), provided they
 * are still those of `rev` (the revision read), and counts the change. Returns false when they
 * changed meanwhile.
 */
export const replaceLimitOverrides = async (db: Db, key: ItemKey, overrides: object, rev: number | undefined) => {
  const still = limitsStill(rev);
  try {
    await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: key,
        UpdateExpression: 'SET limits = :limits ADD limits_rev :one',
        ConditionExpression: `attribute_exists(pk) AND ${still.expression}`,
        ExpressionAttributeValues: { ':limits': overrides, ':one': 1, ...still.values },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionFailed(error)) return false;
    throw error;
  }
};

/** An account's item as its limits need it: its ID, its own limits, their revision and its count of workspaces. */
export type AccountLimitsRecord = AccountLimitFields & { id: string };

/** An account's limits and counts (strongly consistent), or undefined when there is no such account. */
export const getAccountLimitFields = async (db: Db, accountId: string): Promise<AccountLimitsRecord | undefined> => {
  const { Item } = await db.doc.send(
    new GetCommand({
      TableName: db.table,
      Key: accountKey(accountId),
      ConsistentRead: true,
      ProjectionExpression: 'id, limits, limits_rev, workspaces_count',
    }),
  );
  return Item ? strip<AccountLimitsRecord>(Item) : undefined;
};

/**
 * The account a workspace belongs to, from the workspace's ID alone (its default fleet carries
 * it: every workspace has one), for the operator's command; undefined when there is no such workspace.
 */
export const findAccountOfWorkspace = async (db: Db, workspaceId: string) => {
  const { pk, prefix } = collection.fleetsOfWorkspace(workspaceId);
  const { Items } = await db.doc.send(
    new QueryCommand({
      TableName: db.table,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': pk, ':prefix': prefix },
      ProjectionExpression: 'account_id',
      Limit: 1,
    }),
  );
  return Items?.[0]?.account_id as string | undefined;
};
