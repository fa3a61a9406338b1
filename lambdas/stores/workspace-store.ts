import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import type { Workspace } from '../schemas/workspace';
import type { FleetRecord } from './fleet-store';
import { keyedItems, putNew, strip, type ListRead } from './items';
import { collection, fleetKey, workspaceKey } from './keys';

/** A workspace as stored: its public fields and the ID of its `default` fleet. */
export type WorkspaceRecord = Workspace & { default_fleet_id: string };

export const getWorkspaceOfAccount = async (db: Db, accountId: string, workspaceId: string) => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: workspaceKey(accountId, workspaceId), ConsistentRead: true }));
  return Item ? strip<WorkspaceRecord>(Item) : undefined;
};

/** The account's workspaces one by one, in ID order (creation order). */
export const readWorkspacesOfAccount = (db: Db, accountId: string, read: ListRead) => {
  const { pk, prefix } = collection.workspacesOfAccount(accountId);
  return keyedItems<WorkspaceRecord>(db, { pk, prefix, ...read });
};

/** Transaction items that create a workspace and its default fleet. */
export const workspaceWithDefaultFleetWrites = (db: Db, workspace: WorkspaceRecord, fleet: FleetRecord) => [
  putNew(db, workspaceKey(workspace.account_id, workspace.id), workspace),
  putNew(db, fleetKey(fleet.workspace_id, fleet.id), fleet),
];

/** Creates a workspace and its default fleet, all or nothing. */
export const createWorkspaceWithDefaultFleet = async (db: Db, workspace: WorkspaceRecord, fleet: FleetRecord) => {
  await db.doc.send(new TransactWriteCommand({ TransactItems: workspaceWithDefaultFleetWrites(db, workspace, fleet) }));
};
