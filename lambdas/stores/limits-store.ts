import { QueryCommand, TransactWriteCommand, UpdateCommand, type QueryCommandOutput } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import { ThrottledError } from '../shared/errors';
import type { CountedLimit, LimitOverrides } from '../schemas/limits';
import { failedConditions, isConditionFailed } from './errors';
import { collection, workspaceKey, type ItemKey } from './keys';

/** The attribute of the workspace item that counts what each quota limits. */
export const COUNT_ATTRIBUTES: Readonly<Record<CountedLimit, string>> = {
  devices: 'devices_count',
  fleets: 'fleets_count',
  api_keys: 'api_keys_count',
  integrations: 'integrations_count',
};

/**
 * What the workspace item holds for its limits: the count of each quota (absent on workspaces made
 * before the counts existed, until their first create), the operator's own limits, and how many
 * times those were changed (absent: never), which a creating transaction checks has not moved.
 */
export interface WorkspaceLimitFields {
  devices_count?: number;
  fleets_count?: number;
  api_keys_count?: number;
  integrations_count?: number;
  limits?: LimitOverrides;
  limits_rev?: number;
}

/** One item of a TransactWriteItems call. */
export type TransactItem = NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']>[number];

/** The counts of a new workspace: its default fleet, and the API key created with it when there is one. */
export const initialCounts = (
  apiKeys: number,
): Required<Pick<WorkspaceLimitFields, 'devices_count' | 'fleets_count' | 'api_keys_count' | 'integrations_count'>> => ({
  devices_count: 0,
  fleets_count: 1,
  api_keys_count: apiKeys,
  integrations_count: 0,
});

// The limits a transaction read are the ones still stored: none changed since (or never set).
const limitsStill = (rev: number | undefined) =>
  rev === undefined ? { expression: 'attribute_not_exists(limits_rev)', values: {} } : { expression: 'limits_rev = :rev', values: { ':rev': rev } };

/**
 * A transaction item that adds one to a workspace's count of `limit`, provided the count stays
 * within `max` and the workspace's limits are still those of `rev`. `counted` is the count the
 * caller found when the workspace has none yet: the item then sets it (count + 1), provided no
 * other create set it meanwhile.
 */
export const countUpItem = (
  db: Db,
  key: ItemKey,
  limit: CountedLimit,
  { max, rev, counted }: { max: number; rev?: number; counted?: number },
): TransactItem => {
  const still = limitsStill(rev);
  const names = { '#count': COUNT_ATTRIBUTES[limit] };
  return {
    Update:
      counted === undefined
        ? {
            TableName: db.table,
            Key: key,
            UpdateExpression: 'ADD #count :one',
            ConditionExpression: `attribute_exists(pk) AND #count < :max AND ${still.expression}`,
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: { ':one': 1, ':max': max, ...still.values },
          }
        : {
            TableName: db.table,
            Key: key,
            UpdateExpression: 'SET #count = :count',
            ConditionExpression: `attribute_exists(pk) AND attribute_not_exists(#count) AND ${still.expression}`,
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: { ':count': counted + 1, ...still.values },
          },
  };
};

/**
 * A transaction item that takes one from a workspace's count of `limit` (a revoke, a delete),
 * given the count read: on a workspace that has no count yet (undefined) it only checks that it
 * still has none (its first create will count what is left), and a count already at zero (items
 * written around the counts, such as a test's) stays there.
 */
export const countDownItem = (db: Db, key: ItemKey, limit: CountedLimit, count: number | undefined): TransactItem => {
  const names = { '#count': COUNT_ATTRIBUTES[limit] };
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

// What each quota counts in the workspace's partition: keys only until they are revoked.
const COUNTED: Readonly<Record<CountedLimit, { prefix: (workspaceId: string) => { pk: string; prefix: string }; filter?: string }>> = {
  devices: { prefix: collection.devicesOfWorkspace },
  fleets: { prefix: collection.fleetsOfWorkspace },
  api_keys: { prefix: collection.apiKeysOfWorkspace, filter: 'attribute_not_exists(revoked_at) OR attribute_type(revoked_at, :null)' },
  integrations: { prefix: collection.integrationsOfWorkspace },
};

/**
 * How many of what `limit` counts the workspace holds, counted item by item (Select COUNT, page
 * by page): the first create on a workspace made before the counts existed starts its count here.
 */
export const countItemsOf = async (db: Db, workspaceId: string, limit: CountedLimit) => {
  const { prefix, filter } = COUNTED[limit];
  const { pk, prefix: sk } = prefix(workspaceId);
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
  /** The transaction item, from the workspace as last read. @throws QuotaExceededError when the workspace is full. */
  item: () => Promise<TransactItem>;
  /** Its condition failed (the count, the limits or the workspace changed): reads the workspace again. */
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
 * Replaces the operator's limits of a workspace, provided they are still those of `rev` (the
 * revision read), and counts the change. Returns false when they changed meanwhile.
 */
export const replaceLimitOverrides = async (db: Db, accountId: string, workspaceId: string, overrides: LimitOverrides, rev: number | undefined) => {
  const still = limitsStill(rev);
  try {
    await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: workspaceKey(accountId, workspaceId),
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
