import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import { REGISTRY_SWEEP_INDEX, type ItemKey } from './keys';

/** An entry of the sweep index: the item's own key and when it is due (the index's sort key). */
export interface SweepEntry extends ItemKey {
  /** The index's sort key: the due time in ISO 8601 UTC, then the entry's suffix if any. */
  due: string;
}

/** Where a read of due entries starts and stops. */
export interface DueRead {
  /** Entries due strictly before this time (ms since the epoch). */
  before: number;
  /** The index partition (keys.ts: a deadline partition, or the rollouts'). */
  partition: string;
  /** Query's Limit: entries evaluated per page (default: DynamoDB's 1 MB pages). */
  pageSize?: number;
}

const { name: IndexName, partitionKey, sortKey } = REGISTRY_SWEEP_INDEX;

/**
 * Which entries are due before a time, one page at a time, earliest first, from the sweep index
 * (eventually consistent, as every GSI read: an entry written a moment ago may show on the next
 * sweep). Each page's LastEvaluatedKey is passed back until the partition is read to `before`.
 */
export async function* listDueEntries(db: Db, { before, partition, pageSize }: DueRead): AsyncGenerator<SweepEntry[]> {
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page = await db.doc.send(
      new QueryCommand({
        TableName: db.table,
        IndexName,
        KeyConditionExpression: '#pk = :pk AND #sk < :before',
        ExpressionAttributeNames: { '#pk': partitionKey, '#sk': sortKey },
        ExpressionAttributeValues: { ':pk': partition, ':before': new Date(before).toISOString() },
        ...(pageSize ? { Limit: pageSize } : {}),
        ExclusiveStartKey,
      }),
    );
    yield (page.Items ?? []).map((item) => ({ pk: item.pk as string, sk: item.sk as string, due: item[sortKey] as string }));
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
}
