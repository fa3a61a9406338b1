import { BatchGetCommand, GetCommand, type BatchGetCommandOutput } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import type { Fleet } from '../schemas/fleet';
import { keyedItems, putNew, strip, type ListRead } from './items';
import { transactWithQuota, type QuotaCheck } from './limits-store';
import { collection, fleetKey } from './keys';

export type FleetRecord = Fleet;

export const getFleetOfWorkspace = async (db: Db, workspaceId: string, fleetId: string) => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: fleetKey(workspaceId, fleetId), ConsistentRead: true }));
  return Item ? strip<FleetRecord>(Item) : undefined;
};

/** The workspace's fleets one by one, in ID order (creation order). */
export const readFleetsOfWorkspace = (db: Db, workspaceId: string, read: ListRead) => {
  const { pk, prefix } = collection.fleetsOfWorkspace(workspaceId);
  return keyedItems<FleetRecord>(db, { pk, prefix, ...read });
};

/** Creates a fleet, provided the workspace's quota of fleets takes it. @throws QuotaExceededError from the quota. */
export const putFleet = async (db: Db, fleet: FleetRecord, quota: QuotaCheck) => {
  await transactWithQuota(db, [putNew(db, fleetKey(fleet.workspace_id, fleet.id), fleet)], quota);
};

const BATCH_GET_LIMIT = 100; // BatchGetItem reads at most 100 keys

/** The names of those of these fleet IDs that are fleets of the workspace. */
export const getFleetNames = async (db: Db, workspaceId: string, fleetIds: string[]): Promise<Map<string, string>> => {
  const wanted = [...new Set(fleetIds)];
  const found = new Map<string, string>();
  for (let i = 0; i < wanted.length; i += BATCH_GET_LIMIT) {
    let keys: Array<Record<string, unknown>> | undefined = wanted.slice(i, i + BATCH_GET_LIMIT).map((id) => ({ ...fleetKey(workspaceId, id) }));
    while (keys?.length) {
      const result: BatchGetCommandOutput = await db.doc.send(
        new BatchGetCommand({
          RequestItems: { [db.table]: { Keys: keys, ConsistentRead: true, ProjectionExpression: 'id, #name', ExpressionAttributeNames: { '#name': 'name' } } },
        }),
      );
      for (const item of result.Responses?.[db.table] ?? []) found.set(item.id as string, item.name as string);
      keys = result.UnprocessedKeys?.[db.table]?.Keys;
    }
  }
  return found;
};

/** Which of these fleet IDs are not fleets of the workspace. */
export const findMissingFleets = async (db: Db, workspaceId: string, fleetIds: string[]): Promise<string[]> => {
  const found = await getFleetNames(db, workspaceId, fleetIds);
  return [...new Set(fleetIds)].filter((id) => !found.has(id));
};
