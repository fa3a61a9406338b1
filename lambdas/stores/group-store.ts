import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import { ConflictError, NotFoundError } from '../shared/errors';
import { isConditionFailed } from './errors';
import { keyedItems, putNew, strip, type ListRead } from './items';
import { collection, groupKey } from './keys';
import { transactWithQuota, type QuotaCheck } from './limits-store';

/**
 * A group as stored (`WKS#<wks>` / `GRP#<grp>`): its saved query as given, and `used_by`, the
 * string set of the IDs of what targets it (continuous rollouts, alarm rules), written by their
 * owners in the transactions that start and end them; absent when nothing does (DynamoDB drops an
 * emptied set).
 */
export interface GroupRecord {
  id: string;
  name: string;
  query: string;
  account_id: string;
  workspace_id: string;
  created_at: string;
  updated_at: string;
  used_by?: Set<string>;
}

/** The fields a change may set. */
export type GroupChange = Partial<Pick<GroupRecord, 'name' | 'query'>>;

const notFound = (groupId: string, cause?: unknown) => new NotFoundError(`Group ${groupId} not found.`, { cause });

/** Stores a new group, provided the workspace's quota of groups takes it. @throws QuotaExceededError from the quota. */
export const putGroup = async (db: Db, group: GroupRecord, quota: QuotaCheck) => {
  await transactWithQuota(db, [putNew(db, groupKey(group.workspace_id, group.id), group)], quota);
};

export const getGroupOfWorkspace = async (db: Db, workspaceId: string, groupId: string) => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: groupKey(workspaceId, groupId), ConsistentRead: true }));
  return Item ? strip<GroupRecord>(Item) : undefined;
};

/** The workspace's groups one by one, in ID order (creation order). */
export const readGroupsOfWorkspace = (db: Db, workspaceId: string, read: ListRead) => {
  const { pk, prefix } = collection.groupsOfWorkspace(workspaceId);
  return keyedItems<GroupRecord>(db, { pk, prefix, ...read });
};

/** Changes a group's name or query; returns it as it is now. @throws NotFoundError when it does not exist. */
export const updateGroup = async (db: Db, workspaceId: string, groupId: string, change: GroupChange, at: string) => {
  const values: Record<string, unknown> = { ...change, updated_at: at };
  const names: Record<string, string> = {};
  const attrs: Record<string, unknown> = {};
  const sets = Object.entries(values).map(([field, value], i) => {
    names[`#s${i}`] = field;
    attrs[`:s${i}`] = value;
    return `#s${i} = :s${i}`;
  });
  try {
    const { Attributes } = await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: groupKey(workspaceId, groupId),
        UpdateExpression: `SET ${sets.join(', ')}`,
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: attrs,
        ReturnValues: 'ALL_NEW',
      }),
    );
    return strip<GroupRecord>(Attributes!);
  } catch (error) {
    if (isConditionFailed(error)) throw notFound(groupId, error);
    throw error;
  }
};

/**
 * Deletes a group that nothing targets and gives its place in the workspace's quota back, all or
 * nothing; returns it as it was.
 * @throws NotFoundError when it does not exist.
 * @throws ConflictError naming what holds it while its `used_by` is not empty.
 */
export const deleteGroup = async (db: Db, workspaceId: string, groupId: string, quota: QuotaCheck) => {
  const record = await getGroupOfWorkspace(db, workspaceId, groupId);
  if (!record) throw notFound(groupId);
  const remove = {
    Delete: {
      TableName: db.table,
      Key: groupKey(workspaceId, groupId),
      ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(used_by)',
    },
  };
  // The condition is checked at the delete: a rollout that took the group after the read above still stops it.
  if (await transactWithQuota(db, [remove], quota)) {
    const now = await getGroupOfWorkspace(db, workspaceId, groupId);
    if (!now) throw notFound(groupId);
    throw inUse(groupId, now.used_by);
  }
  return record;
};

/** The refusal of deleting a group that something targets. */
export const inUse = (groupId: string, usedBy: Set<string> | undefined) => {
  const users = [...(usedBy ?? [])].sort();
  return new ConflictError(`Group ${groupId} is used by ${users.join(', ')}: end (cancel) what targets it before deleting it.`, {
    details: [{ field: 'path.groupId', message: `Used by ${users.join(', ')}.` }],
  });
};
