import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import { NotFoundError } from '../shared/errors';
import { checkExists, keyedPages, putNew, queryAll, strip, type ListRead } from './items';
import { failedConditions } from './errors';
import { collection, deviceKey, deviceLocatorKey, fleetKey } from './keys';

/** A device as stored (names of its fleet and workspace are joined in on read). */
export interface DeviceRecord {
  id: string;
  name: string;
  account_id: string;
  workspace_id: string;
  fleet_id: string;
  phys_id: string;
  created_at: string;
}

/** Where a device lives; found from its ID alone (the `/devices/{deviceId}` routes). */
export interface DeviceLocator {
  account_id: string;
  workspace_id: string;
}

export const getDeviceOfWorkspace = async (db: Db, workspaceId: string, deviceId: string) => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: deviceKey(workspaceId, deviceId), ConsistentRead: true }));
  return Item ? strip<DeviceRecord>(Item) : undefined;
};

export const findDeviceLocator = async (db: Db, deviceId: string) => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: deviceLocatorKey(deviceId), ConsistentRead: true }));
  return Item ? strip<DeviceLocator>(Item) : undefined;
};

/**
 * The workspace's devices page by page, in ID order (creation order: shared/ids.ts), only those of
 * `fleetIds` when given (a filter: DynamoDB still reads the others, and `pageSize` would count them).
 */
export const readDevicesOfWorkspace = (db: Db, workspaceId: string, { fleetIds, ...read }: ListRead & { fleetIds?: string[] }) => {
  const { pk, prefix } = collection.devicesOfWorkspace(workspaceId);
  if (!fleetIds?.length) return keyedPages<DeviceRecord>(db, { pk, prefix, ...read });
  const wanted = [...new Set(fleetIds)];
  return keyedPages<DeviceRecord>(db, {
    pk,
    prefix,
    after: read.after,
    extra: {
      // IN takes up to 100 values, as many as the `fleet` parameter may name.
      FilterExpression: `fleet_id IN (${wanted.map((_, i) => `:f${i}`).join(', ')})`,
      ExpressionAttributeValues: Object.fromEntries(wanted.map((id, i) => [`:f${i}`, id])),
    },
  });
};

/** IDs, fleets and MQTT connection state of the workspace's devices in these fleets (every fleet when `fleetIds` is undefined). */
export const listDevicesOfFleets = async (db: Db, workspaceId: string, fleetIds?: string[]) => {
  const { pk, prefix } = collection.devicesOfWorkspace(workspaceId);
  const devices = await queryAll<Pick<DeviceRecord, 'id' | 'fleet_id'> & { connected?: boolean }>(db, pk, prefix, {
    ProjectionExpression: 'id, fleet_id, connected',
  });
  const wanted = fleetIds && new Set(fleetIds);
  return devices.filter((d) => !wanted || wanted.has(d.fleet_id));
};

/**
 * Creates a device and its locator, provided its fleet exists, all or nothing.
 * @throws NotFoundError when the fleet is not in the workspace.
 */
export const createDevice = async (db: Db, device: DeviceRecord) => {
  try {
    await db.doc.send(
      new TransactWriteCommand({
        TransactItems: [
          putNew(db, deviceKey(device.workspace_id, device.id), device),
          putNew(db, deviceLocatorKey(device.id), { account_id: device.account_id, workspace_id: device.workspace_id }),
          checkExists(db, fleetKey(device.workspace_id, device.fleet_id)),
        ],
      }),
    );
  } catch (error) {
    if (failedConditions(error)?.includes(2)) throw new NotFoundError(`Fleet ${device.fleet_id} not found.`, { cause: error });
    throw error;
  }
};

/**
 * Sets a device's name, fleet (and physical ID when given), provided both exist, all or nothing.
 * @throws NotFoundError when the device or the fleet is not in the workspace.
 */
export const updateDevice = async (
  db: Db,
  workspaceId: string,
  deviceId: string,
  change: { name: string; fleet_id: string; phys_id?: string },
): Promise<DeviceRecord> => {
  const sets = ['#name = :name', 'fleet_id = :fleet', ...(change.phys_id !== undefined ? ['phys_id = :phys'] : [])];
  try {
    await db.doc.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Update: {
              TableName: db.table,
              Key: deviceKey(workspaceId, deviceId),
              UpdateExpression: `SET ${sets.join(', ')}`,
              ConditionExpression: 'attribute_exists(pk)',
              ExpressionAttributeNames: { '#name': 'name' },
              ExpressionAttributeValues: {
                ':name': change.name,
                ':fleet': change.fleet_id,
                ...(change.phys_id !== undefined ? { ':phys': change.phys_id } : {}),
              },
            },
          },
          checkExists(db, fleetKey(workspaceId, change.fleet_id)),
        ],
      }),
    );
  } catch (error) {
    const failed = failedConditions(error);
    if (failed?.includes(0)) throw new NotFoundError(`Device ${deviceId} not found.`, { cause: error });
    if (failed?.includes(1)) throw new NotFoundError(`Fleet ${change.fleet_id} not found.`, { cause: error });
    throw error;
  }
  const device = await getDeviceOfWorkspace(db, workspaceId, deviceId);
  if (!device) throw new NotFoundError(`Device ${deviceId} not found.`);
  return device;
};
