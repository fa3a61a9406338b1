import { BatchWriteCommand, GetCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import { ThrottledError } from '../shared/errors';
import type { DeviceHealthFields } from './device-health-store';
import type { DeviceRecord } from './device-store';
import { failedConditions } from './errors';
import type { IdentityRecord } from './identity-store';
import { FIRMWARE_INDEX_KEY } from './device-tag-index';
import { deviceKey, deviceLocatorKey, identityKey, tagIndexKey, workspaceKey } from './keys';
import type { WorkspaceRecord } from './workspace-store';

/**
 * What stays of a deleted device: its locator (`DEV#<id>` / `DEVICE`) becomes this tombstone, kept
 * for ever. It is what refuses a late token, MQTT connection or message cheaply (the one read every
 * door already makes), and, as the locator is created only where none exists, what keeps the ID
 * from ever naming another device.
 */
export interface DeviceTombstone {
  account_id: string;
  workspace_id: string;
  /** When the device was deleted (RFC 3339). */
  deleted_at: string;
  /** When what follows the registry's writes (session closed, work canceled) was done; absent: a DELETE that failed half-way owes it. */
  finished_at?: string;
}

/** The attribute that makes a locator a tombstone. */
export const DELETED_AT = 'deleted_at';

/** A deleted device's tombstone, read strongly consistent; undefined when the ID names no deleted device. */
export const findDeviceTombstone = async (db: Db, deviceId: string): Promise<DeviceTombstone | undefined> => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: deviceLocatorKey(deviceId), ConsistentRead: true }));
  return typeof Item?.[DELETED_AT] === 'string'
    ? {
        account_id: Item.account_id as string,
        workspace_id: Item.workspace_id as string,
        deleted_at: Item[DELETED_AT] as string,
        ...(typeof Item.finished_at === 'string' ? { finished_at: Item.finished_at } : {}),
      }
    : undefined;
};

/** Marks a deleted device's deletion finished (its session closed, its work canceled), on its tombstone. */
export const markDeletionFinished = async (db: Db, deviceId: string, at: string) => {
  await db.doc.send(
    new UpdateCommand({
      TableName: db.table,
      Key: deviceLocatorKey(deviceId),
      UpdateExpression: 'SET finished_at = :at',
      ConditionExpression: 'attribute_exists(#deleted)',
      ExpressionAttributeNames: { '#deleted': DELETED_AT },
      ExpressionAttributeValues: { ':at': at },
    }),
  );
};

// TransactWriteItems takes 100 actions: the device, its locator, its workspace, and this many identities.
const IDENTITIES_IN_TRANSACTION = 90;
const BATCH_WRITE_LIMIT = 25;
const MAX_ATTEMPTS = 8;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The workspace's part: one place freed in its quota of devices, one per identity that was not
 * revoked in its quota of identities (a count the workspace does not keep yet is left for its first
 * create to count), and its `places_version` moved on, so that the MQTT data path forgets where the
 * device was.
 */
const workspaceCountsDown = (db: Db, workspace: WorkspaceRecord, activeIdentities: number) => {
  const adds = ['places_version :one'];
  const conditions = ['attribute_exists(pk)'];
  const values: Record<string, number> = { ':one': 1 };
  const counts: Array<[string, number | undefined, number]> = [
    ['devices_count', workspace.devices_count, 1],
    ['identities_count', workspace.identities_count, activeIdentities],
  ];
  for (const [attribute, count, n] of counts) {
    if (count === undefined) conditions.push(`attribute_not_exists(${attribute})`);
    else if (count > 0 && n > 0) {
      const minus = Math.min(count, n);
      adds.push(`${attribute} :minus_${attribute}`);
      values[`:minus_${attribute}`] = -minus;
      values[`:least_${attribute}`] = minus;
      conditions.push(`${attribute} >= :least_${attribute}`);
    }
  }
  return {
    Update: {
      TableName: db.table,
      Key: workspaceKey(workspace.account_id, workspace.id),
      UpdateExpression: `ADD ${adds.join(', ')}`,
      ConditionExpression: conditions.join(' AND '),
      ExpressionAttributeValues: values,
    },
  };
};

/**
 * Deletes a device as read (`device`, at its `rev`), all or nothing: its item goes (lists, searches
 * and fleet-wide schedulings no longer see it), its locator becomes a tombstone
 * ({@link DeviceTombstone}), its identities go (up to 90 in the transaction, the others right after:
 * the tombstone refuses their tokens already), and its workspace counts it and its identities out.
 * @returns 'deleted'; 'changed' when the device, its identities or the workspace's counts changed
 * since they were read (read them again), 'gone' when the device is not there any more.
 */
export const deleteDeviceRecords = async (
  db: Db,
  workspace: WorkspaceRecord,
  device: DeviceRecord & DeviceHealthFields,
  identities: IdentityRecord[],
  at: string,
): Promise<'deleted' | 'changed' | 'gone'> => {
  const active = identities.filter((i) => !i.revoked_at).length;
  const inTransaction = identities.slice(0, IDENTITIES_IN_TRANSACTION);
  try {
    await db.doc.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Delete: {
              TableName: db.table,
              Key: deviceKey(workspace.id, device.id),
              ConditionExpression: device.rev === undefined ? 'attribute_exists(pk) AND attribute_not_exists(#rev)' : '#rev = :rev',
              ExpressionAttributeNames: { '#rev': 'rev' },
              ...(device.rev === undefined ? {} : { ExpressionAttributeValues: { ':rev': device.rev } }),
            },
          },
          {
            Update: {
              TableName: db.table,
              Key: deviceLocatorKey(device.id),
              // The counts of the day and the place go: the tombstone says who it was and when it went.
              UpdateExpression: `SET #deleted = :at REMOVE fleet_id, #name`,
              ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(#deleted)',
              ExpressionAttributeNames: { '#deleted': DELETED_AT, '#name': 'name' },
              ExpressionAttributeValues: { ':at': at },
            },
          },
          workspaceCountsDown(db, workspace, active),
          ...inTransaction.map((identity) => ({
            Delete: {
              TableName: db.table,
              Key: identityKey(workspace.id, device.id, identity.id),
              ConditionExpression: 'attribute_exists(pk)',
            },
          })),
        ],
      }),
    );
  } catch (error) {
    const failed = failedConditions(error);
    if (!failed) throw error;
    if (failed.includes(1)) return 'gone';
    return 'changed';
  }
  // The tombstone refuses the other identities' tokens already; a tag index entry left by a failure
  // here is a candidate every search checks against the device, which is gone.
  await deleteItems(db, [
    ...identities.slice(IDENTITIES_IN_TRANSACTION).map((identity) => identityKey(workspace.id, device.id, identity.id)),
    ...Object.entries({ ...device.tags, ...(device.firmware_version ? { [FIRMWARE_INDEX_KEY]: device.firmware_version } : {}) }).map(([key, value]) =>
      tagIndexKey(workspace.id, device.id, key, value),
    ),
  ]);
  return 'deleted';
};

/** Deletes items by key with BatchWriteItem (25 a call), unprocessed ones asked again with backoff; not atomic. */
export const deleteItems = async (db: Db, keys: Array<{ pk: string; sk: string }>) => {
  for (let i = 0; i < keys.length; i += BATCH_WRITE_LIMIT) {
    let requests = keys.slice(i, i + BATCH_WRITE_LIMIT).map((Key) => ({ DeleteRequest: { Key } }));
    for (let attempt = 0; requests.length; attempt++) {
      if (attempt >= MAX_ATTEMPTS) throw new ThrottledError('The registry is busy; retry the request.');
      if (attempt) await pause(Math.random() * Math.min(1000, 25 * 2 ** attempt));
      const result = await db.doc.send(new BatchWriteCommand({ RequestItems: { [db.table]: requests } }));
      requests = (result.UnprocessedItems?.[db.table] ?? []) as typeof requests;
    }
  }
};
