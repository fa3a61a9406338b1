import { QueryCommand, UpdateCommand, type QueryCommandOutput } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import { USAGE_COUNTERS, type UsageCounts } from '../schemas/usage';
import { usageKey } from './keys';

/** Counts to add to one workspace's usage of one UTC day. */
export interface UsageIncrement {
  workspaceId: string;
  /** `YYYY-MM-DD`, UTC. */
  day: string;
  counts: Partial<UsageCounts>;
}

/**
 * Adds counts to a workspace's usage of a day: one UpdateItem (ADD), which creates the day's item
 * when it is the first. Counts of zero are left out; nothing at all writes nothing.
 */
export const addUsage = async (db: Db, { workspaceId, day, counts }: UsageIncrement) => {
  const added = USAGE_COUNTERS.filter((name) => (counts[name] ?? 0) !== 0);
  if (!added.length) return;
  await db.doc.send(
    new UpdateCommand({
      TableName: db.table,
      Key: usageKey(workspaceId, day),
      UpdateExpression: `SET #day = :day, workspace_id = :ws ADD ${added.map((_name, i) => `#c${i} :c${i}`).join(', ')}`,
      ExpressionAttributeNames: { '#day': 'date', ...Object.fromEntries(added.map((name, i) => [`#c${i}`, name])) },
      ExpressionAttributeValues: { ':day': day, ':ws': workspaceId, ...Object.fromEntries(added.map((name, i) => [`:c${i}`, counts[name]])) },
    }),
  );
};

/** The usage items of a workspace from `start` to `end` (UTC days, both included), oldest first: days without activity have none. */
export const readUsageDays = async (db: Db, workspaceId: string, start: string, end: string) => {
  const days: Array<Partial<UsageCounts> & { date: string }> = [];
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page: QueryCommandOutput = await db.doc.send(
      new QueryCommand({
        TableName: db.table,
        ConsistentRead: true,
        KeyConditionExpression: 'pk = :pk AND sk BETWEEN :start AND :end',
        ExpressionAttributeValues: { ':pk': usageKey(workspaceId, start).pk, ':start': usageKey(workspaceId, start).sk, ':end': usageKey(workspaceId, end).sk },
        ExclusiveStartKey,
      }),
    );
    for (const item of page.Items ?? []) days.push(item as Partial<UsageCounts> & { date: string });
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return days;
};
