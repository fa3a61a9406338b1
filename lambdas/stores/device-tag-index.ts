import { BatchGetCommand, BatchWriteCommand, type BatchGetCommandOutput } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import { type Keyed, keyedItems, strip, type TransactAction } from './items';
import { deviceKey, tagIndexKey, tagIndexPrefix } from './keys';

/**
 * The tag index: one small item per device and tag, `WKS#<wks>` / `TAG#<key>#<len>#<value>#<dev>`,
 * in the workspace's partition, written in the same transaction as the device's tags (or, for a
 * change of more than ~95 entries, its new entries just before it: see {@link tagIndexWrites}).
 * `tags.k = "v"` is then a key range in device ID order. The index finds candidates; the device
 * itself decides (a query re-checks every device it reads), so an entry left over by a
 * transaction that failed after its early puts only costs a read.
 */

/**
 * The index's key for a device's `firmware_version` (a selective field of queries: "everything
 * still on 1.1"): `$` is in no tag key, so these entries never meet a tag's.
 */
export const FIRMWARE_INDEX_KEY = '$firmware_version';

/** A device's tags as stored: absent on devices made before tags. */
export type StoredTags = Record<string, string>;

/** The transaction actions that take a device's tag index entries from `before` to `after`: puts of new entries, deletes of gone ones. */
export const tagIndexWrites = (db: Db, workspaceId: string, deviceId: string, before: StoredTags = {}, after: StoredTags = {}) => {
  const puts: TransactAction[] = [];
  const deletes: TransactAction[] = [];
  for (const [key, value] of Object.entries(after))
    if (before[key] !== value) puts.push({ Put: { TableName: db.table, Item: { ...tagIndexKey(workspaceId, deviceId, key, value), device_id: deviceId } } });
  for (const [key, value] of Object.entries(before))
    if (after[key] !== value) deletes.push({ Delete: { TableName: db.table, Key: tagIndexKey(workspaceId, deviceId, key, value) } });
  return { puts, deletes };
};

// TransactWriteItems takes at most 100 actions; BatchWriteItem 25 requests.
// https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html
const TRANSACT_LIMIT = 100;
const BATCH_WRITE_LIMIT = 25;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Splits a device's index changes between the device's own transaction and what must be written
 * before it: all in the transaction when they fit beside its `others` actions (the usual case);
 * otherwise (50 tags replaced by 50 others) the puts go first, by BatchWriteItem, and the
 * transaction holds the deletes. An early put whose transaction then fails leaves an entry of a
 * tag the device lacks: a candidate the query's own check drops, never a device missed.
 */
export const splitTagIndexWrites = async (
  db: Db,
  writes: { puts: TransactAction[]; deletes: TransactAction[] },
  others: number,
  /** Run before the early puts: throws when the change is refused anyway (an unknown fleet), so that a refused request writes nothing. */
  precheck: () => Promise<void>,
): Promise<TransactAction[]> => {
  if (others + writes.puts.length + writes.deletes.length <= TRANSACT_LIMIT) return [...writes.puts, ...writes.deletes];
  await precheck();
  for (let i = 0; i < writes.puts.length; i += BATCH_WRITE_LIMIT) {
    let requests: Array<Record<string, unknown>> = writes.puts
      .slice(i, i + BATCH_WRITE_LIMIT)
      .map((put) => ({ PutRequest: { Item: (put.Put as { Item: unknown }).Item } }));
    for (let attempt = 0; requests.length; attempt++) {
      if (attempt) await pause(Math.random() * Math.min(1000, 25 * 2 ** attempt));
      const result = await db.doc.send(new BatchWriteCommand({ RequestItems: { [db.table]: requests as never } }));
      requests = (result.UnprocessedItems?.[db.table] ?? []) as Array<Record<string, unknown>>;
    }
  }
  return writes.deletes;
};

/**
 * The IDs of the workspace's devices that carry the tag `key` = `value` (as the index says), in
 * device ID order, keyed by the device's own sort key (`DEV#<dev>`, a list's cursor), after
 * `afterDevice` (a device ID) when given.
 */
export async function* readTaggedDeviceIds(
  db: Db,
  workspaceId: string,
  key: string,
  value: string,
  { afterDevice, pageSize }: { afterDevice?: string; pageSize?: number } = {},
): AsyncGenerator<Keyed<string>> {
  const prefix = tagIndexPrefix(key, value);
  const { pk } = tagIndexKey(workspaceId, '', key, value);
  const entries = keyedItems<string>(
    db,
    {
      pk,
      prefix,
      after: afterDevice === undefined ? undefined : `${prefix}${afterDevice}`,
      pageSize,
      // A page's entries are read, no more: the next ones only when the page's devices did not fill it.
      ...(pageSize ? { grow: () => 0 } : {}),
      // A value's entries lie anywhere in the workspace's partition (after its devices, identities and other keys' entries).
      keyRange: true,
      extra: { ProjectionExpression: 'sk' },
    },
    (item) => (item.sk as string).slice(prefix.length),
  );
  for await (const { value: deviceId } of entries) yield { sk: deviceKey(workspaceId, deviceId).sk, value: deviceId };
}

// BatchGetItem reads at most 100 keys a call.
const BATCH_GET_LIMIT = 100;

/**
 * The device items of these IDs that exist, read strongly consistently (as the device list reads),
 * 100 a call, the calls at once; keys left unprocessed are asked again. Answers a map by ID.
 */
export const getDevicesByIds = async <T>(db: Db, workspaceId: string, deviceIds: readonly string[]): Promise<Map<string, T>> => {
  const found = new Map<string, T>();
  const chunks: string[][] = [];
  for (let i = 0; i < deviceIds.length; i += BATCH_GET_LIMIT) chunks.push(deviceIds.slice(i, i + BATCH_GET_LIMIT));
  await Promise.all(
    chunks.map(async (ids) => {
      let keys: Array<Record<string, unknown>> | undefined = ids.map((id) => ({ ...deviceKey(workspaceId, id) }));
      for (let attempt = 0; keys?.length; attempt++) {
        if (attempt) await pause(Math.min(1000, 25 * 2 ** attempt));
        const result: BatchGetCommandOutput = await db.doc.send(new BatchGetCommand({ RequestItems: { [db.table]: { Keys: keys, ConsistentRead: true } } }));
        for (const item of result.Responses?.[db.table] ?? []) found.set(item.id as string, strip<T>(item));
        keys = result.UnprocessedKeys?.[db.table]?.Keys;
      }
    }),
  );
  return found;
};
