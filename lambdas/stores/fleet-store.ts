import { BatchGetCommand, GetCommand, QueryCommand, TransactWriteCommand, UpdateCommand, type BatchGetCommandOutput } from '@aws-sdk/lib-dynamodb';
import { ConflictError, NotFoundError, ThrottledError } from '../shared/errors';
import { failedConditions, isConditionFailed } from './errors';
import type { Db } from '../shared/clients';
import type { Fleet } from '../schemas/fleet';
import { keyedItems, putNew, strip, type ListRead } from './items';
import { transactWithQuota, type QuotaCheck, type TransactItem } from './limits-store';
import { collection, fleetKey } from './keys';

export type FleetRecord = Fleet & {
  /** Set while a DELETE checks that the fleet holds no device: no device may be created in it or moved to it meanwhile. */
  deleting_at?: string;
};

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

/**
 * A transaction item that holds while the fleet exists and is not being deleted: every write that
 * puts a device in a fleet (a create, a move) has it, so that a fleet found empty under its
 * deletion mark stays empty ({@link markFleetDeleting}).
 */
export const fleetTakesDevices = (db: Db, workspaceId: string, fleetId: string): TransactItem => ({
  ConditionCheck: {
    TableName: db.table,
    Key: fleetKey(workspaceId, fleetId),
    ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(deleting_at)',
  },
});

/** Why a fleet refused a device (its {@link fleetTakesDevices} failed): 409 while it is being deleted, 404 when it is not there. */
export const fleetRefusal = async (db: Db, workspaceId: string, fleetId: string, cause: unknown) => {
  const fleet = await getFleetOfWorkspace(db, workspaceId, fleetId);
  return fleet ? new ConflictError(`Fleet ${fleetId} is being deleted.`, { cause }) : new NotFoundError(`Fleet ${fleetId} not found.`, { cause });
};

/**
 * Marks a fleet as being deleted (`deleting_at`), unless it is already gone: from then on no device
 * is created in it or moved to it. A mark left by a DELETE that did not finish is taken over.
 * @returns false when there is no such fleet.
 */
export const markFleetDeleting = async (db: Db, workspaceId: string, fleetId: string, at: string) => {
  try {
    await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: fleetKey(workspaceId, fleetId),
        UpdateExpression: 'SET deleting_at = :at',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':at': at },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionFailed(error)) return false;
    throw error;
  }
};

/** Takes a fleet's deletion mark away (it was found holding devices): devices may enter it again. */
export const unmarkFleetDeleting = async (db: Db, workspaceId: string, fleetId: string, at: string) => {
  try {
    await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: fleetKey(workspaceId, fleetId),
        UpdateExpression: 'REMOVE deleting_at',
        ConditionExpression: 'deleting_at = :at',
        ExpressionAttributeValues: { ':at': at },
      }),
    );
  } catch (error) {
    if (!isConditionFailed(error)) throw error;
  }
};

/**
 * Whether any device of the workspace is in the fleet: the workspace's devices read strongly
 * consistent (keys and fleet only, filtered by the fleet), stopping at the first one found. A
 * device created or moved before the fleet's deletion mark committed is seen.
 */
export const fleetHoldsDevices = async (db: Db, workspaceId: string, fleetId: string) => {
  const { pk, prefix } = collection.devicesOfWorkspace(workspaceId);
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page = await db.doc.send(
      new QueryCommand({
        TableName: db.table,
        ConsistentRead: true,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        FilterExpression: 'fleet_id = :fleet',
        ProjectionExpression: 'pk',
        ExpressionAttributeValues: { ':pk': pk, ':prefix': prefix, ':fleet': fleetId },
        ExclusiveStartKey,
      }),
    );
    if (page.Items?.length) return true;
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return false;
};

/**
 * Deletes a fleet under its deletion mark of `at`, with its place in the workspace's quota of
 * fleets given back (`release`), all or nothing.
 * @returns false when the mark is not that one any more (another DELETE took it over, or it is gone).
 */
export const deleteMarkedFleet = async (db: Db, workspaceId: string, fleetId: string, at: string, release: QuotaCheck): Promise<boolean> => {
  for (let attempt = 0; attempt < 8; attempt++) {
    const counted = await release.item();
    try {
      await db.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Delete: {
                TableName: db.table,
                Key: fleetKey(workspaceId, fleetId),
                ConditionExpression: 'deleting_at = :at',
                ExpressionAttributeValues: { ':at': at },
              },
            },
            counted,
          ],
        }),
      );
      return true;
    } catch (error) {
      const failed = failedConditions(error);
      if (failed?.includes(0)) return false;
      if (failed) await release.failed();
      else if ((error as { name?: string }).name !== 'TransactionCanceledException') throw error;
    }
  }
  throw new ThrottledError('The workspace is busy; retry the request.');
};
