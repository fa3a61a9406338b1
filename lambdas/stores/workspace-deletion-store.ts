import { QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import { ThrottledError } from '../shared/errors';
import { deleteItems } from './device-deletion-store';
import { failedConditions, isConditionFailed } from './errors';
import { accountKey, apiKeyHashKey, collection, workspaceKey, type ItemKey } from './keys';

/**
 * Marks a workspace as being deleted (`deleting_at`) while it counts no device: from then on every
 * create counted in its quotas (devices, fleets, keys, identities, integrations, firmware versions,
 * exports, rollouts) is refused, so nothing new lands in it while it goes. A mark left by a DELETE
 * that did not finish is taken over.
 * @returns 'marked'; 'devices' when it counts devices; 'gone' when there is no such workspace.
 */
export const markWorkspaceDeleting = async (db: Db, accountId: string, workspaceId: string, at: string): Promise<'marked' | 'devices' | 'gone'> => {
  try {
    await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: workspaceKey(accountId, workspaceId),
        UpdateExpression: 'SET deleting_at = :at',
        ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(devices_count) OR devices_count <= :zero)',
        ExpressionAttributeValues: { ':at': at, ':zero': 0 },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return 'marked';
  } catch (error) {
    if (!isConditionFailed(error)) throw error;
    return (error as { Item?: unknown }).Item ? 'devices' : 'gone';
  }
};

/** Takes a workspace's deletion mark away (it was found holding devices): creates are counted again. */
export const unmarkWorkspaceDeleting = async (db: Db, accountId: string, workspaceId: string, at: string) => {
  try {
    await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: workspaceKey(accountId, workspaceId),
        UpdateExpression: 'REMOVE deleting_at',
        ConditionExpression: 'deleting_at = :at',
        ExpressionAttributeValues: { ':at': at },
      }),
    );
  } catch (error) {
    if (!isConditionFailed(error)) throw error;
  }
};

/** Whether the workspace holds a device item (strongly consistent; one is enough): the count may be older than the items (items written around it). */
export const workspaceHoldsDevices = async (db: Db, workspaceId: string) => {
  const { pk, prefix } = collection.devicesOfWorkspace(workspaceId);
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page = await db.doc.send(
      new QueryCommand({
        TableName: db.table,
        ConsistentRead: true,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ProjectionExpression: 'pk',
        ExpressionAttributeValues: { ':pk': pk, ':prefix': prefix },
        Limit: 1,
        ExclusiveStartKey,
      }),
    );
    if (page.Items?.length) return true;
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return false;
};

/**
 * Deletes every item of the workspace's partition (`WKS#<ws>`: fleets, API keys, identities,
 * integrations, groups, rules, firmware versions, exports, rollouts and their counters, usage, the
 * scheduling clock) and the lookup item of each API key (by its hash), a page at a time;
 * `beforeDelete` sees each page's items first (their S3 objects go before the items that name
 * them). Idempotent: a retry deletes what is left.
 * @returns how many items it deleted.
 */
export const deleteWorkspacePartition = async (db: Db, workspaceId: string, beforeDelete: (items: Array<Record<string, unknown>>) => Promise<void>) => {
  let deleted = 0;
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const answer = await db.doc.send(
      new QueryCommand({
        TableName: db.table,
        ConsistentRead: true,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': `WKS#${workspaceId}` },
        ExclusiveStartKey,
      }),
    );
    ExclusiveStartKey = answer.LastEvaluatedKey;
    const page = answer.Items ?? [];
    await beforeDelete(page);
    const keys: ItemKey[] = page.flatMap((item) => {
      const own = { pk: item.pk as string, sk: item.sk as string };
      return own.sk.startsWith('APIKEY#') && typeof item.hash === 'string' ? [apiKeyHashKey(item.hash), own] : [own];
    });
    await deleteItems(db, keys);
    deleted += keys.length;
  } while (ExclusiveStartKey);
  return deleted;
};

/**
 * Deletes the workspace's item under its deletion mark of `at`, and gives its place in the
 * account's quota of workspaces back, all or nothing.
 * @returns false when the mark is not that one any more (another DELETE took it over, or it is gone).
 * @throws ThrottledError when it never commits.
 */
export const deleteMarkedWorkspace = async (db: Db, accountId: string, workspaceId: string, at: string) => {
  for (let attempt = 0; attempt < 8; attempt++) {
    try {
      await db.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Delete: {
                TableName: db.table,
                Key: workspaceKey(accountId, workspaceId),
                ConditionExpression: 'deleting_at = :at',
                ExpressionAttributeValues: { ':at': at },
              },
            },
            {
              // An account whose count started counts the workspace out; one without a count is left for its first create to count.
              Update: {
                TableName: db.table,
                Key: accountKey(accountId),
                UpdateExpression: 'ADD workspaces_count :minus',
                ConditionExpression: 'workspaces_count > :zero',
                ExpressionAttributeValues: { ':minus': -1, ':zero': 0 },
              },
            },
          ],
        }),
      );
      return true;
    } catch (error) {
      const failed = failedConditions(error);
      if (failed?.includes(0)) return false;
      if (failed?.includes(1)) return deleteWithoutCount(db, accountId, workspaceId, at);
      if ((error as { name?: string }).name !== 'TransactionCanceledException') throw error;
    }
  }
  throw new ThrottledError('The account is busy; retry the request.');
};

/** The workspace's item alone, for an account that keeps no count (or a count at zero, items written around it). */
const deleteWithoutCount = async (db: Db, accountId: string, workspaceId: string, at: string) => {
  try {
    await db.doc.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Delete: {
              TableName: db.table,
              Key: workspaceKey(accountId, workspaceId),
              ConditionExpression: 'deleting_at = :at',
              ExpressionAttributeValues: { ':at': at },
            },
          },
          {
            ConditionCheck: {
              TableName: db.table,
              Key: accountKey(accountId),
              ConditionExpression: 'attribute_not_exists(workspaces_count) OR workspaces_count <= :zero',
              ExpressionAttributeValues: { ':zero': 0 },
            },
          },
        ],
      }),
    );
    return true;
  } catch (error) {
    if (failedConditions(error)?.includes(0)) return false;
    throw error;
  }
};
