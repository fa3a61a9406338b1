import { DeleteCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Db } from '../shared/clients';
import { isConditionFailed } from './errors';
import { FIRMWARE_INDEX_KEY } from './device-tag-index';
import { collection, deviceKey, tagIndexKey } from './keys';

/** What the data and FOTA paths keep on a device's item, beside the management API's and the MQTT door's fields. */
export interface DeviceHealthFields {
  /** Arrival of the device's newest data point, kept to within {@link SEEN_GRANULARITY_MS}. */
  last_seen_at?: string;
  /** The version the device's last FOTA ended `done` with. */
  firmware_version?: string;
}

/** How far a device's `last_seen_at` may lag the arrival of its newest point: it is written at most once in this time. */
export const SEEN_GRANULARITY_MS = 60_000;

/**
 * Records that a device's data arrived at `at`, only when its stored `last_seen_at` is missing or
 * older than `at` by more than {@link SEEN_GRANULARITY_MS} (a conditional UpdateItem, which writes
 * nothing otherwise): one write a device a minute at most, however many points it sends. Answers
 * the device's `last_seen_at` as stored now (`at` when written), or undefined when the device no
 * longer exists (it is not recreated).
 */
export const markDeviceSeen = async (db: Db, workspaceId: string, deviceId: string, at: string): Promise<string | undefined> => {
  try {
    await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: deviceKey(workspaceId, deviceId),
        UpdateExpression: 'SET last_seen_at = :at',
        // RFC 3339 UTC with milliseconds (toISOString): text order is time order.
        ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(last_seen_at) OR last_seen_at < :stale)',
        ExpressionAttributeValues: { ':at': at, ':stale': new Date(Date.parse(at) - SEEN_GRANULARITY_MS).toISOString() },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return at;
  } catch (error) {
    if (!isConditionFailed(error)) throw error;
    const raw = (error as { Item?: Parameters<typeof unmarshall>[0] }).Item;
    return raw ? (unmarshall(raw).last_seen_at as string | undefined) : undefined;
  }
};

/**
 * Records the firmware version a device runs (its FOTA ended `done`), with its entry in the index
 * (stores/device-tag-index.ts): the new entry first, then the device, then the old entry's delete,
 * so that a crash between them leaves at most an entry of a version the device no longer runs (a
 * candidate the query's own check drops), never a device the index misses. A device that no
 * longer exists is not recreated, and the entry just written is taken back.
 */
export const setDeviceFirmware = async (db: Db, workspaceId: string, deviceId: string, version: string) => {
  const entry = (of: string) => tagIndexKey(workspaceId, deviceId, FIRMWARE_INDEX_KEY, of);
  await db.doc.send(new PutCommand({ TableName: db.table, Item: { ...entry(version), device_id: deviceId } }));
  try {
    const { Attributes } = await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: deviceKey(workspaceId, deviceId),
        UpdateExpression: 'SET firmware_version = :version',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':version': version },
        ReturnValues: 'UPDATED_OLD',
      }),
    );
    const before = Attributes?.firmware_version as string | undefined;
    if (before !== undefined && before !== version) await db.doc.send(new DeleteCommand({ TableName: db.table, Key: entry(before) }));
  } catch (error) {
    if (!isConditionFailed(error)) throw error;
    await db.doc.send(new DeleteCommand({ TableName: db.table, Key: entry(version) }));
  }
};

/** What the overview reads of a device. */
export interface DeviceHealth extends DeviceHealthFields {
  id: string;
  fleet_id: string;
  connected?: boolean;
  /** The two sides of its state (absent for a device never given one). */
  state?: { desired?: Record<string, unknown>; reported?: Record<string, unknown> };
}

/**
 * The workspace's devices, projected to what the overview counts, page by page (1 MB of items a
 * page, eventually consistent: half a read unit per 4 KB read). DynamoDB still reads whole items;
 * the projection only shortens the answer.
 */
export async function* readDeviceHealthPages(db: Db, workspaceId: string): AsyncGenerator<DeviceHealth[]> {
  const { pk, prefix } = collection.devicesOfWorkspace(workspaceId);
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page = await db.doc.send(
      new QueryCommand({
        TableName: db.table,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': pk, ':prefix': prefix },
        ProjectionExpression: 'id, fleet_id, connected, last_seen_at, firmware_version, #state.desired, #state.reported',
        ExpressionAttributeNames: { '#state': 'state' },
        ExclusiveStartKey,
      }),
    );
    yield (page.Items ?? []) as DeviceHealth[];
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
}

/**
 * Records that a device's data on `tag` arrived at `at`, in its `last_seen_tags` map (the tags a
 * `silent` rule names), only when the stored time of that tag is missing or older than `at` by more
 * than {@link SEEN_GRANULARITY_MS} (conditional: nothing written otherwise). Answers the tag's time
 * as stored now (`at` when written), or undefined when the device no longer exists.
 */
export const markDeviceTagSeen = async (db: Db, workspaceId: string, deviceId: string, tag: string, at: string): Promise<string | undefined> => {
  const names = { '#tags': 'last_seen_tags', '#tag': tag };
  const stale = new Date(Date.parse(at) - SEEN_GRANULARITY_MS).toISOString();
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await db.doc.send(
        new UpdateCommand({
          TableName: db.table,
          Key: deviceKey(workspaceId, deviceId),
          UpdateExpression: 'SET #tags.#tag = :at',
          ConditionExpression: 'attribute_exists(pk) AND attribute_exists(#tags) AND (attribute_not_exists(#tags.#tag) OR #tags.#tag < :stale)',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: { ':at': at, ':stale': stale },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return at;
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      const raw = (error as { Item?: Parameters<typeof unmarshall>[0] }).Item;
      if (!raw) return undefined;
      const tags = unmarshall(raw).last_seen_tags as Record<string, string> | undefined;
      if (tags) return tags[tag];
    }
    // The device's first tag kept: the map is created with it (a nested path needs its map).
    try {
      await db.doc.send(
        new UpdateCommand({
          TableName: db.table,
          Key: deviceKey(workspaceId, deviceId),
          UpdateExpression: 'SET #tags = :tags',
          ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(#tags)',
          ExpressionAttributeNames: { '#tags': 'last_seen_tags' },
          ExpressionAttributeValues: { ':tags': { [tag]: at } },
        }),
      );
      return at;
    } catch (error) {
      // Created meanwhile (another container), or the device gone: the next attempt tells which.
      if (!isConditionFailed(error)) throw error;
    }
  }
  return undefined;
};
