import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import { ConflictError, NotFoundError } from '../shared/errors';
import type { Workspace } from '../schemas/workspace';
import type { FleetRecord } from './fleet-store';
import { keyedItems, putNew, strip, type ListRead } from './items';
import { collection, fleetKey, workspaceKey } from './keys';
import { isConditionFailed } from './errors';
import { transactWithQuota, type QuotaCheck, type WorkspaceLimitFields } from './limits-store';

/**
 * A workspace as stored: its public fields (`data_retention_days` absent on a workspace that never
 * set it: kept forever), the ID of its `default` fleet, its counts and limits, and the bookkeeping of its retention.
 */
export type WorkspaceRecord = Omit<Workspace, 'data_retention_days'> &
  WorkspaceLimitFields & {
    default_fleet_id: string;
    data_retention_days?: number | null;
    /** Counts the changes of `data_retention_days`: a change is written only over the version it read. */
    retention_version?: number;
    /**
     * Where the expiry of the workspace's stored points is still owed a re-stamp after a change: the
     * earliest key time (RFC 3339) whose items must be re-stamped, or `''` for all of them. Absent:
     * nothing owed. Cleared by the re-stamp job of the current version when it is done.
     */
    retention_owed_from?: string;
    /** Counts the moves and renames of the workspace's devices (stores/device-store.ts updateDevice): the ingest's remembered places are current while it holds. */
    places_version?: number;
    /** Set while a DELETE removes the workspace (stores/workspace-deletion-store.ts): it answers 404 and counts no create. */
    deleting_at?: string;
  };

/** What a PATCH writes: the public fields it changes, and a retention change with its bookkeeping. */
export interface WorkspaceChange {
  name?: string;
  description?: string;
  retention?: { days: number | null; version: number; owedFrom: string };
}

export const getWorkspaceOfAccount = async (db: Db, accountId: string, workspaceId: string, { consistent = true } = {}) => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: workspaceKey(accountId, workspaceId), ConsistentRead: consistent }));
  return Item ? strip<WorkspaceRecord>(Item) : undefined;
};

/** The account's workspaces one by one, in ID order (creation order). */
export const readWorkspacesOfAccount = (db: Db, accountId: string, read: ListRead) => {
  const { pk, prefix } = collection.workspacesOfAccount(accountId);
  return keyedItems<WorkspaceRecord>(db, { pk, prefix, ...read });
};

/**
 * Changes a workspace. A retention change is written only while the workspace's retention version
 * is still the one before it (`version - 1`), so that two concurrent changes cannot both compute
 * what they owe from the same old value.
 * @throws NotFoundError when the workspace is gone; ConflictError when its retention changed meanwhile.
 */
export const updateWorkspace = async (db: Db, accountId: string, workspaceId: string, change: WorkspaceChange) => {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const sets: string[] = [];
  const set = (attribute: string, value: unknown) => {
    names[`#${attribute}`] = attribute;
    values[`:${attribute}`] = value;
    sets.push(`#${attribute} = :${attribute}`);
  };
  if (change.name !== undefined) set('name', change.name);
  if (change.description !== undefined) set('description', change.description);
  let condition = 'attribute_exists(pk)';
  if (change.retention) {
    set('data_retention_days', change.retention.days);
    set('retention_version', change.retention.version);
    set('retention_owed_from', change.retention.owedFrom);
    if (change.retention.version === 1) condition += ' AND attribute_not_exists(#retention_version)';
    else {
      values[':before'] = change.retention.version - 1;
      condition += ' AND #retention_version = :before';
    }
  }
  try {
    const { Attributes } = await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: workspaceKey(accountId, workspaceId),
        UpdateExpression: `SET ${sets.join(', ')}`,
        ConditionExpression: condition,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ReturnValues: 'ALL_NEW',
      }),
    );
    return strip<WorkspaceRecord>(Attributes!);
  } catch (error) {
    if (!isConditionFailed(error)) throw error;
    const now = await getWorkspaceOfAccount(db, accountId, workspaceId);
    if (!now) throw new NotFoundError(`Workspace ${workspaceId} not found.`, { cause: error });
    throw new ConflictError('The workspace’s data retention was changed by another request meanwhile: read it and try again.', { cause: error });
  }
};

/**
 * Marks the retention re-stamp of `version` done: clears what the workspace owed, unless a later
 * change (another version) owes more meanwhile. @returns whether it was cleared.
 */
export const clearRetentionOwed = async (db: Db, accountId: string, workspaceId: string, version: number) => {
  try {
    await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: workspaceKey(accountId, workspaceId),
        UpdateExpression: 'REMOVE retention_owed_from',
        ConditionExpression: 'retention_version = :version',
        ExpressionAttributeValues: { ':version': version },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionFailed(error)) return false;
    throw error;
  }
};

/** Transaction items that create a workspace and its default fleet. */
export const workspaceWithDefaultFleetWrites = (db: Db, workspace: WorkspaceRecord, fleet: FleetRecord) => [
  putNew(db, workspaceKey(workspace.account_id, workspace.id), workspace),
  putNew(db, fleetKey(fleet.workspace_id, fleet.id), fleet),
];

/**
 * Creates a workspace and its default fleet, provided its account's quota of workspaces takes it, all or nothing.
 * @throws QuotaExceededError from the quota.
 */
export const createWorkspaceWithDefaultFleet = async (db: Db, workspace: WorkspaceRecord, fleet: FleetRecord, quota: QuotaCheck) => {
  await transactWithQuota(db, workspaceWithDefaultFleetWrites(db, workspace, fleet), quota);
};
