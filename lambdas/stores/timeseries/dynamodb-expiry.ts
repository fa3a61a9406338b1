/**
 * Expiry of the `dynamodb` backend's items when a workspace's retention changes: each item of the
 * workspace re-stamped, page by page, resumable past a deadline.
 */
import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../../shared/clients';
import { parseTime } from '../../shared/timestamps';
import { expiresAt, keyTime, keyTimeOf, PACK_SPAN_MICROS, SHARDS, seriesPartition, TIMESERIES_TTL_ATTRIBUTE } from './keys';
import type { ExpiryRestamp, RestampCursor } from './types';

/** Items of a partition a re-stamp reads per Query page (keys only), and updates in flight at once. */
const RESTAMP_PAGE_ITEMS = 500;
const RESTAMP_CONCURRENCY = 16;

/**
 * Sets (or, with no retention, removes) one item's expiry. Its latest point lies at most a span
 * after its sort key's time. Only an item that still exists is updated: an UpdateItem of an item
 * that TTL deleted meanwhile would create a bare one.
 */
const restampItem = async (db: Db, key: { pk: string; sk: string }, days: number | null, now: number) => {
  const earliest = keyTimeOf(key.sk);
  if (!earliest) return false;
  const expiry = days === null ? undefined : expiresAt(earliest.ms + PACK_SPAN_MICROS / 1000, days, now);
  try {
    await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: key,
        UpdateExpression: expiry === undefined ? 'REMOVE #expires' : 'SET #expires = :expires',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: { '#expires': TIMESERIES_TTL_ATTRIBUTE },
        ...(expiry === undefined ? {} : { ExpressionAttributeValues: { ':expires': expiry } }),
      }),
    );
    return true;
  } catch (error) {
    if ((error as Error).name === 'ConditionalCheckFailedException') return false;
    throw error;
  }
};

/**
 * Re-stamps the expiry of a workspace's items from `from` on, shard after shard, a page of keys at
 * a time (RESTAMP_CONCURRENCY updates in flight), until done or past the deadline.
 */
export const restampWorkspace = async (
  db: Db,
  { workspaceId, from, days, now, resume, deadline }: ExpiryRestamp,
): Promise<{ items: number; cursor?: RestampCursor }> => {
  let items = 0;
  const lower = from === '' ? undefined : parseTime(from);
  for (let shard = resume?.shard ?? 0; shard < SHARDS; shard++) {
    let after = shard === resume?.shard ? resume.after : undefined;
    do {
      if (Date.now() > deadline) return { items, cursor: { shard, after } };
      const { Items = [], LastEvaluatedKey } = await db.doc.send(
        new QueryCommand({
          TableName: db.table,
          KeyConditionExpression: lower ? '#pk = :pk AND #sk >= :from' : '#pk = :pk',
          ExpressionAttributeNames: { '#pk': 'pk', ...(lower ? { '#sk': 'sk' } : {}) },
          ExpressionAttributeValues: { ':pk': seriesPartition(workspaceId, shard), ...(lower ? { ':from': keyTime(lower) } : {}) },
          ProjectionExpression: '#pk, sk',
          Limit: RESTAMP_PAGE_ITEMS,
          ExclusiveStartKey: after,
        }),
      );
      const keys = Items as Array<{ pk: string; sk: string }>;
      for (let i = 0; i < keys.length; i += RESTAMP_CONCURRENCY) {
        const done = await Promise.all(keys.slice(i, i + RESTAMP_CONCURRENCY).map((key) => restampItem(db, { pk: key.pk, sk: key.sk }, days, now)));
        items += done.filter(Boolean).length;
      }
      after = LastEvaluatedKey as { pk: string; sk: string } | undefined;
    } while (after);
  }
  return { items };
};
