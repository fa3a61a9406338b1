/**
 * Purges of the `dynamodb` backend: a deleted device's points, or every item of a deleted
 * workspace, shard after shard, a page of items at a time, resumable past a deadline.
 *
 * A pack holds the points of every device that one write brought, so a device's points are not
 * items of their own: an item that holds only its points (a pack, or a point item of the layout
 * before packs) is deleted (BatchWriteItem, 25 a call, unprocessed ones asked again); a pack that
 * holds others' points too is rewritten without them, by an UpdateItem of its body conditioned on
 * the body read (two purges of one workspace never put back each other's points: the one that
 * lost reads the body again from the answer and goes on) and on the item existing (never
 * re-creating one that its TTL deleted meanwhile); its expiry is left as it is. The sealed hours
 * whose points change are stamped pending before and final after, as a late write stamps them, so
 * that their rollups are computed again without the device.
 */
import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Db } from '../../shared/clients';
import { settleAll } from '../../shared/settle';
import { deleteItems } from '../device-deletion-store';
import type { PackBody } from './dynamodb-packing';
import { sealedHoursOf, stampHours } from './dynamodb-rollups';
import { isPackKey, keyTimeOf, SHARDS, seriesPartition, stampPartition } from './keys';
import type { PointsPurge, PurgeCursor } from './types';

/** Items of a partition a purge reads per Query page, and pack rewrites in flight at once. */
const PURGE_PAGE_ITEMS = 500;
const REWRITE_CONCURRENCY = 16;
/** Times a rewrite reads a pack again after another purge changed it first. */
const REWRITE_ATTEMPTS = 8;

interface Key {
  pk: string;
  sk: string;
}

interface PurgeItem extends Key {
  p?: string;
  device_id?: string;
}

/**
 * What a device's purge does to an item: nothing (none of its points), delete it (only its
 * points), or rewrite it with the body given; and the times (ms) of the points it removes.
 */
export type ItemPurge = { kind: 'keep' } | { kind: 'delete'; times: number[] } | { kind: 'rewrite'; body: string; times: number[] };

/** The body of a pack without the rows of `deviceId`, its devices and fleets indexed anew. */
export const purgeItem = (item: PurgeItem, deviceId: string): ItemPurge => {
  const earliest = keyTimeOf(item.sk);
  if (!earliest) return { kind: 'keep' };
  if (item.p === undefined || !isPackKey(item.sk)) return item.device_id === deviceId ? { kind: 'delete', times: [earliest.ms] } : { kind: 'keep' };
  const body = JSON.parse(item.p) as PackBody;
  const gone = body.d.indexOf(deviceId);
  if (gone < 0) return { kind: 'keep' };
  const kept = body.r.filter((row) => row[0] !== gone);
  const times = body.r.filter((row) => row[0] === gone).map((row) => earliest.ms + Math.floor((earliest.us + row[3]) / 1000));
  if (!kept.length) return { kind: 'delete', times };
  const devices: string[] = [];
  const fleets: string[] = [];
  const indexIn = (list: string[], name: string) => {
    const at = list.indexOf(name);
    return at < 0 ? list.push(name) - 1 : at;
  };
  const rows = kept.map(([device, fleet, ...rest]): PackBody['r'][number] => [indexIn(devices, body.d[device]), indexIn(fleets, body.f[fleet]), ...rest]);
  return { kind: 'rewrite', body: JSON.stringify({ d: devices, f: fleets, r: rows }), times };
};

/** Rewrites a pack without the device's points; when another purge changed it first, reads its body again from the refusal. */
const rewritePack = async (db: Db, key: Key, deviceId: string, body: string, read: string): Promise<void> => {
  let next = body;
  let expected = read;
  for (let attempt = 0; attempt < REWRITE_ATTEMPTS; attempt++) {
    try {
      await db.doc.send(
        new UpdateCommand({
          TableName: db.table,
          Key: key,
          UpdateExpression: 'SET #p = :next',
          ConditionExpression: '#p = :read',
          ExpressionAttributeNames: { '#p': 'p' },
          ExpressionAttributeValues: { ':next': next, ':read': expected },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return;
    } catch (error) {
      if ((error as Error).name !== 'ConditionalCheckFailedException') throw error;
      // The refusal holds the item as it is now, in DynamoDB's own attribute values (the document client does not convert errors).
      const raw = (error as { Item?: Parameters<typeof unmarshall>[0] }).Item;
      const now = raw ? unmarshall(raw) : undefined;
      // Gone (its TTL, or another purge deleted it): nothing of the device is left there.
      if (typeof now?.p !== 'string') return;
      const again = purgeItem({ ...key, p: now.p }, deviceId);
      if (again.kind === 'keep') return;
      if (again.kind === 'delete') return deleteItems(db, [key]);
      next = again.body;
      expected = now.p;
    }
  }
  throw Object.assign(new Error(`Pack ${key.sk} kept changing during a purge.`), { name: 'ThrottlingException' });
};

/** The sealed hours of the points a page removes, as `stampHours` takes them. */
const hoursOf = (workspaceId: string, times: number[], now: number) =>
  sealedHoursOf(
    times.map((ms) => ({ workspace_id: workspaceId, ms })),
    now,
  );

/** Purges the device's points from one page of items; returns how many items it deleted or rewrote. */
const purgeDevicePage = async (db: Db, workspaceId: string, deviceId: string, items: PurgeItem[], now: number, writeConcurrency: number) => {
  const deletes: Key[] = [];
  const rewrites: Array<{ key: Key; body: string; read: string }> = [];
  const times: number[] = [];
  for (const item of items) {
    const purge = purgeItem(item, deviceId);
    if (purge.kind === 'keep') continue;
    times.push(...purge.times);
    if (purge.kind === 'delete') deletes.push({ pk: item.pk, sk: item.sk });
    else rewrites.push({ key: { pk: item.pk, sk: item.sk }, body: purge.body, read: item.p! });
  }
  if (!deletes.length && !rewrites.length) return 0;
  const hours = hoursOf(workspaceId, times, now);
  await stampHours(db, hours, true, now, writeConcurrency);
  await deleteItems(db, deletes);
  const results = await settleAll(rewrites, REWRITE_CONCURRENCY, ({ key, body, read }) => rewritePack(db, key, deviceId, body, read));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  await stampHours(db, hours, false, now, writeConcurrency);
  return deletes.length + rewrites.length;
};

/**
 * The partitions a purge reads, in order: the workspace's shards of points, then (a workspace's
 * purge only) its stamps of sealed hours. Its rollups (`R#<workspace>#<field>`) cannot be listed
 * by workspace: they expire with their TTL (ROLLUP_LIFETIME_DAYS at most).
 */
const partitionOf = (workspaceId: string, index: number) => (index < SHARDS ? seriesPartition(workspaceId, index) : stampPartition(workspaceId));

/**
 * Purges a device's points (`deviceId`) or every item of a workspace from the store, partition
 * after partition, a page at a time, until done or past the deadline; a purge resumed at its
 * cursor goes on where it stopped (each page is finished before the cursor passes it, and doing
 * a page again changes nothing).
 */
export const purgeWorkspacePoints = async (
  db: Db,
  writeConcurrency: number,
  { workspaceId, deviceId, now, resume, deadline }: PointsPurge,
): Promise<{ items: number; cursor?: PurgeCursor }> => {
  let items = 0;
  const partitions = deviceId === undefined ? SHARDS + 1 : SHARDS;
  for (let shard = resume?.shard ?? 0; shard < partitions; shard++) {
    let after = shard === resume?.shard ? resume.after : undefined;
    do {
      if (Date.now() > deadline) return { items, cursor: { shard, after } };
      const { Items = [], LastEvaluatedKey } = await db.doc.send(
        new QueryCommand({
          TableName: db.table,
          KeyConditionExpression: '#pk = :pk',
          ExpressionAttributeNames: { '#pk': 'pk', '#sk': 'sk', ...(deviceId === undefined ? {} : { '#p': 'p', '#device': 'device_id' }) },
          ExpressionAttributeValues: { ':pk': partitionOf(workspaceId, shard) },
          ProjectionExpression: deviceId === undefined ? '#pk, #sk' : '#pk, #sk, #p, #device',
          ConsistentRead: true,
          Limit: PURGE_PAGE_ITEMS,
          ExclusiveStartKey: after,
        }),
      );
      const page = Items as PurgeItem[];
      if (deviceId === undefined) {
        await deleteItems(
          db,
          page.map(({ pk, sk }) => ({ pk, sk })),
        );
        items += page.length;
      } else {
        items += await purgeDevicePage(db, workspaceId, deviceId, page, now, writeConcurrency);
      }
      after = LastEvaluatedKey as Key | undefined;
    } while (after);
  }
  return { items };
};
