import { BatchWriteCommand, QueryCommand, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import type { ItemKey } from './keys';

/** Drops the table's own attributes from an item, leaving the resource's fields. */
export const strip = <T>(item: Record<string, unknown>): T => {
  const { pk: _pk, sk: _sk, ...rest } = item;
  return rest as T;
};

/**
 * Every item of a collection (pk, sk prefix), following LastEvaluatedKey to the end.
 * Strongly consistent: a list right after a write sees it.
 */
export const queryAll = async <T>(
  db: Db,
  pk: string,
  prefix: string,
  extra: Partial<QueryCommandInput> = {},
): Promise<T[]> => {
  const items: T[] = [];
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page = await db.doc.send(
      new QueryCommand({
        ConsistentRead: true,
        ...extra,
        TableName: db.table,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ...extra.ExpressionAttributeValues, ':pk': pk, ':prefix': prefix },
        ExclusiveStartKey,
      }),
    );
    for (const item of page.Items ?? []) items.push(strip<T>(item));
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return items;
};

const BATCH_WRITE_LIMIT = 25; // BatchWriteItem takes at most 25 requests
const MAX_ATTEMPTS = 8;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Writes one chunk of ≤ 25 puts, retrying UnprocessedItems with exponential backoff and jitter. */
const writeChunk = async (db: Db, items: Array<ItemKey & Record<string, unknown>>) => {
  let requests = items.map((Item) => ({ PutRequest: { Item } }));
  for (let attempt = 0; requests.length; attempt++) {
    if (attempt >= MAX_ATTEMPTS) throw Object.assign(new Error('BatchWriteItem kept returning unprocessed items'), { name: 'ThrottlingException' });
    if (attempt > 0) await pause(Math.random() * Math.min(1000, 25 * 2 ** attempt));
    const result = await db.doc.send(new BatchWriteCommand({ RequestItems: { [db.table]: requests } }));
    requests = (result.UnprocessedItems?.[db.table] ?? []) as typeof requests;
  }
};

/**
 * Puts many items (overwriting same-key ones) with BatchWriteItem, `concurrency` calls in flight.
 * Not atomic; callers make the writes idempotent so that a retry converges.
 */
export const putAll = async (db: Db, items: Array<ItemKey & Record<string, unknown>>, concurrency: number) => {
  const chunks: Array<typeof items> = [];
  for (let i = 0; i < items.length; i += BATCH_WRITE_LIMIT) chunks.push(items.slice(i, i + BATCH_WRITE_LIMIT));
  let next = 0;
  const worker = async () => {
    while (next < chunks.length) await writeChunk(db, chunks[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, chunks.length) }, worker));
};

/** A transaction item that creates an item, failing if its key is taken. */
export const putNew = (db: Db, key: ItemKey, fields: object) => ({
  Put: { TableName: db.table, Item: { ...key, ...fields }, ConditionExpression: 'attribute_not_exists(pk)' },
});

/** A transaction item that only checks an item exists. */
export const checkExists = (db: Db, key: ItemKey) => ({
  ConditionCheck: { TableName: db.table, Key: key, ConditionExpression: 'attribute_exists(pk)' },
});
