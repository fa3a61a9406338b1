import { BatchGetCommand, GetCommand, PutCommand, type BatchGetCommandOutput } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import type { Fleet } from '../schemas/fleet';
import { queryAll, strip } from './items';
import { collection, fleetKey } from './keys';

export type FleetRecord = Fleet;

export const getFleetOfWorkspace = async (db: Db, workspaceId: string, fleetId: string) => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: fleetKey(workspaceId, fleetId), ConsistentRead: true }));
  return Item ? strip<FleetRecord>(Item) : undefined;
};

export const listFleetsOfWorkspace = (db: Db, workspaceId: string) => {
  const { pk, prefix } = collection.fleetsOfWorkspace(workspaceId);
  return queryAll<FleetRecord>(db, pk, prefix);
};

export const putFleet = async (db: Db, fleet: FleetRecord) => {
  await db.doc.send(
    new PutCommand({ TableName: db.table, Item: { ...fleetKey(fleet.workspace_id, fleet.id), ...fleet }, ConditionExpression: 'attribute_not_exists(pk)' }),
  );
};

const BATCH_GET_LIMIT = 100; // BatchGetItem reads at most 100 keys

/** Which of these fleet IDs are not fleets of the workspace. */
export const findMissingFleets = async (db: Db, workspaceId: string, fleetIds: string[]): Promise<string[]> => {
  const wanted = [...new Set(fleetIds)];
  const found = new Set<string>();
  for (let i = 0; i < wanted.length; i += BATCH_GET_LIMIT) {
    let keys: Array<Record<string, unknown>> | undefined = wanted.slice(i, i + BATCH_GET_LIMIT).map((id) => ({ ...fleetKey(workspaceId, id) }));
    while (keys?.length) {
      const result: BatchGetCommandOutput = await db.doc.send(
        new BatchGetCommand({ RequestItems: { [db.table]: { Keys: keys, ConsistentRead: true, ProjectionExpression: 'id' } } }),
      );
      for (const item of result.Responses?.[db.table] ?? []) found.add(item.id as string);
      keys = result.UnprocessedKeys?.[db.table]?.Keys;
    }
  }
  return wanted.filter((id) => !found.has(id));
};
