import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import { isConditionFailed } from './errors';
import { queryAll } from './items';
import { collection, deviceKey } from './keys';

/** What the MQTT door keeps on a device's item, beside the fields the management API writes. */
export interface DeviceConnectionFields {
  connected?: boolean;
  last_connected_at?: string;
  last_disconnected_at?: string;
  /** Milliseconds of the presence event last applied: an older one, delivered late, changes nothing. */
  presence_ms?: number;
  manifest?: unknown;
}

/**
 * Records a connection or disconnection on the device's item, unless a later presence event was
 * already applied (presence events may arrive out of order). Answers whether it was applied; a
 * device that no longer exists is not recreated.
 */
export const setDeviceConnection = async (db: Db, workspaceId: string, deviceId: string, connected: boolean, at: string, atMs: number) => {
  try {
    await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: deviceKey(workspaceId, deviceId),
        UpdateExpression: `SET connected = :connected, presence_ms = :ms, ${connected ? 'last_connected_at' : 'last_disconnected_at'} = :at`,
        ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(presence_ms) OR presence_ms <= :ms)',
        ExpressionAttributeValues: { ':connected': connected, ':ms': atMs, ':at': at },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionFailed(error)) return false;
    throw error;
  }
};

/** Keeps the jobs and conditions a device exposes (its `__manifest`) on its item. */
export const setDeviceManifest = async (db: Db, workspaceId: string, deviceId: string, manifest: unknown) => {
  try {
    await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: deviceKey(workspaceId, deviceId),
        UpdateExpression: 'SET manifest = :manifest',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':manifest': manifest },
      }),
    );
  } catch (error) {
    if (!isConditionFailed(error)) throw error;
  }
};

/** A condition a device opened and has not closed: its pointer to the record (stores/condition-store.ts). */
export interface OpenCondition {
  uuid: string;
  tag: string;
  start: string;
}

/** The device's open conditions (what `#conditions` answers). */
export const listOpenConditionsOfDevice = (db: Db, deviceId: string) => {
  const { pk, prefix } = collection.conditionsOfDevice(deviceId);
  return queryAll<OpenCondition>(db, pk, prefix);
};
