import { QueryCommand, type QueryCommandOutput } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import type { JobStatus } from '../schemas/job';
import { getMany, type Keyed } from './items';
import {
  INDEX_SHARDS,
  REGISTRY_SWEEP_INDEX,
  deviceKey,
  readRolloutDeviceSortKey,
  rolloutDevicesEntry,
  rolloutDevicesPartition,
  supersededKey,
  type ItemKey,
} from './keys';

const { partitionKey: SWEEP_PK, sortKey: SWEEP_SK } = REGISTRY_SWEEP_INDEX;

/** A device of a rollout as its index entry tells it. */
export interface RolloutDeviceRow {
  device_id: string;
  status: JobStatus;
  /** When it reached its state (pending and in progress: when it was released). */
  time: string;
  /** The item's own key (a job, a FOTA, or what a later scheduling left of one). */
  key: ItemKey;
}

/** Where a read of one shard of a rollout's devices starts and what it covers. */
export interface RolloutDevicesRead {
  /** Only this state. */
  status?: JobStatus;
  /** Start after this index sort key (a cursor's). */
  after?: string;
  /** Only entries whose sort key is below this (a state's entries up to a time). */
  before?: string;
  /** Query's Limit. */
  pageSize?: number;
}

// Every index sort key of a rollout device is `<status>#<time>#<device>`: letters, digits and
// `#:.-TZ_`, all above "!" and below "~", so these bound every key of a state (or of all), and
// `after + "!"` is the first key past `after`.
const LOWEST = '!';
const HIGHEST = '~';

/**
 * One shard of a rollout's devices, in index order (by state, then the time they reached it, then
 * device ID), page by page, from the sweep index (eventually consistent, as every index).
 */
export async function* readRolloutDevicesShard(db: Db, rolloutId: string, shard: number, read: RolloutDevicesRead): AsyncGenerator<Keyed<RolloutDeviceRow>> {
  const low = read.after !== undefined ? `${read.after}${LOWEST}` : read.status ? `${read.status}#` : LOWEST;
  const high = read.before ?? (read.status ? `${read.status}#${HIGHEST}` : HIGHEST);
  if (high <= low) return;
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page: QueryCommandOutput = await db.doc.send(
      new QueryCommand({
        TableName: db.table,
        IndexName: REGISTRY_SWEEP_INDEX.name,
        KeyConditionExpression: '#pk = :pk AND #sk BETWEEN :low AND :high',
        ExpressionAttributeNames: { '#pk': SWEEP_PK, '#sk': SWEEP_SK },
        ExpressionAttributeValues: { ':pk': rolloutDevicesPartition(rolloutId, shard), ':low': low, ':high': high },
        ...(read.pageSize ? { Limit: read.pageSize } : {}),
        ExclusiveStartKey,
      }),
    );
    for (const item of page.Items ?? []) {
      const sk = item[SWEEP_SK] as string;
      const { status, time, deviceId } = readRolloutDeviceSortKey(sk);
      yield { sk, value: { device_id: deviceId, status: status as JobStatus, time, key: { pk: item.pk as string, sk: item.sk as string } } };
    }
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
}

/** What the index does not hold of a rollout device's item. */
export interface DeviceDetails {
  updated_at?: string;
  /** A job's result, as stored (JSON text). */
  result?: unknown;
  /** A FOTA's last message. */
  message?: string;
}

/**
 * What the index does not hold of some rollout devices' items (when they last changed, a job's
 * result, a FOTA's message), by item key (`pk|sk`), eventually consistent as the index they come
 * from.
 */
export const readDeviceDetails = async (db: Db, keys: ItemKey[]): Promise<Map<string, DeviceDetails>> => {
  const items = await getMany(db, keys, 'pk, sk, updated_at, #result, message', { '#result': 'result' });
  return new Map(
    items.map((item) => [
      `${item.pk}|${item.sk}`,
      { updated_at: item.updated_at as string | undefined, result: item.result, message: item.message as string | undefined },
    ]),
  );
};

/**
 * The names of some devices of a workspace, by device ID (one BatchGetItem of their items per 100,
 * eventually consistent); a device that no longer exists is absent.
 */
export const readDeviceNames = async (db: Db, workspaceId: string, deviceIds: string[]): Promise<Map<string, string>> => {
  const items = await getMany(
    db,
    [...new Set(deviceIds)].map((id) => deviceKey(workspaceId, id)),
    'id, #name',
    { '#name': 'name' },
  );
  return new Map(items.map((item) => [item.id as string, item.name as string]));
};

/** Every shard number of a rollout's devices in the sweep index. */
export const ROLLOUT_DEVICE_SHARDS: readonly number[] = Array.from({ length: INDEX_SHARDS }, (_, k) => k);

/**
 * What a device's job or FOTA (the item of sort key `itemSortKey`) was in a rollout once a later
 * scheduling replaced it: its final state there, listed among the rollout's devices as any other.
 */
export const supersededItem = (
  itemSortKey: string,
  old: { device_id: string; rollout_id: string; workspace_id: string; result?: Record<string, unknown>; message?: string },
  status: JobStatus,
  updatedAt: string,
) => ({
  ...supersededKey(old.device_id, old.rollout_id, itemSortKey),
  device_id: old.device_id,
  rollout_id: old.rollout_id,
  workspace_id: old.workspace_id,
  status,
  updated_at: updatedAt,
  ...(old.result !== undefined && (status === 'done' || status === 'failed') ? { result: JSON.stringify(old.result) } : {}),
  ...(old.message ? { message: old.message } : {}),
  ...rolloutDevicesEntry(old.rollout_id, old.device_id, status, updatedAt),
});
