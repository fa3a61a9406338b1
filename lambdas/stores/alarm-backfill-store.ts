import { DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import { isConditionFailed } from './errors';
import { ALARM_BACKFILL_SORT_KEY_PREFIX, REGISTRY_SWEEP_INDEX, alarmBackfillKey, alarmTimerPartition, collection, shardOfDevice, sweepEntry } from './keys';
import type { SweepEntry } from './sweep-store';

/**
 * A rule's backfill (`WKS#<wks>` / `ALARMBACKFILL#<alr>`): the devices its rule targeted before it
 * was created or enabled get the timers their state needs, a page at a time by the minute sweep,
 * which finds it in the alarm timers' sweep partitions (by rule, sort key `<due>#<workspace>`).
 */
export interface AlarmBackfill {
  workspace_id: string;
  account_id: string;
  rule_id: string;
  /** The sort key of the last device whose timers were written; absent: from the first. */
  after?: string;
}

/** What a due entry of a backfill names (no read), and its index sort key as seen. */
export interface DueBackfill {
  workspaceId: string;
  ruleId: string;
  seen: string;
}

/** Whether a due entry of an alarm timer partition is a rule's backfill (else a device's timer). */
export const isBackfillEntry = (entry: SweepEntry) => entry.sk.startsWith(ALARM_BACKFILL_SORT_KEY_PREFIX);

export const dueBackfillOf = (entry: SweepEntry): DueBackfill => ({
  workspaceId: entry.pk.slice('WKS#'.length),
  ruleId: entry.sk.slice(ALARM_BACKFILL_SORT_KEY_PREFIX.length),
  seen: entry.due,
});

const entryOf = (dueAt: number, ruleId: string, workspaceId: string) => sweepEntry(dueAt, alarmTimerPartition(shardOfDevice(ruleId)), `#${workspaceId}`);

/**
 * Starts a rule's backfill from its first device, due at `dueAt` (ms): over one that was running
 * (a rule disabled and enabled again starts over; the running one's next write finds its entry moved).
 */
export const putBackfill = async (db: Db, backfill: Omit<AlarmBackfill, 'after'>, dueAt: number) => {
  await db.doc.send(
    new PutCommand({
      TableName: db.table,
      Item: { ...alarmBackfillKey(backfill.workspace_id, backfill.rule_id), ...backfill, ...entryOf(dueAt, backfill.rule_id, backfill.workspace_id) },
    }),
  );
};

/** A rule's backfill as it is now (strongly consistent), with its index sort key; undefined when none. */
export const getBackfill = async (db: Db, workspaceId: string, ruleId: string) => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: alarmBackfillKey(workspaceId, ruleId), ConsistentRead: true }));
  return Item as (AlarmBackfill & { sweep_sk: string }) | undefined;
};

/**
 * Moves a backfill's cursor past `after`, due again at `dueAt` (ms), only over the index entry
 * read (`seen`): answers the new entry's sort key, or undefined when it was restarted or deleted meanwhile.
 */
export const advanceBackfill = async (db: Db, due: DueBackfill, after: string, dueAt: number) => {
  const entry = entryOf(dueAt, due.ruleId, due.workspaceId);
  try {
    await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: alarmBackfillKey(due.workspaceId, due.ruleId),
        UpdateExpression: 'SET #after = :after, #ssk = :ssk',
        ConditionExpression: '#ssk = :seen',
        ExpressionAttributeNames: { '#after': 'after', '#ssk': REGISTRY_SWEEP_INDEX.sortKey },
        ExpressionAttributeValues: { ':after': after, ':ssk': entry[REGISTRY_SWEEP_INDEX.sortKey], ':seen': due.seen },
      }),
    );
    return entry[REGISTRY_SWEEP_INDEX.sortKey];
  } catch (error) {
    if (isConditionFailed(error)) return undefined;
    throw error;
  }
};

/** Ends a backfill (done, or its rule gone or disabled), only over the index entry read. */
export const deleteBackfill = async (db: Db, due: DueBackfill) => {
  try {
    await db.doc.send(
      new DeleteCommand({
        TableName: db.table,
        Key: alarmBackfillKey(due.workspaceId, due.ruleId),
        ConditionExpression: '#ssk = :seen',
        ExpressionAttributeNames: { '#ssk': REGISTRY_SWEEP_INDEX.sortKey },
        ExpressionAttributeValues: { ':seen': due.seen },
      }),
    );
  } catch (error) {
    if (!isConditionFailed(error)) throw error;
  }
};

/**
 * One page of the workspace's devices after the sort key `after` (whole items, strongly
 * consistent: a rule's targets are matched on them), at most `limit`; `next` is the last one's
 * sort key, undefined at the end.
 */
export const readDevicePage = async (db: Db, workspaceId: string, after: string | undefined, limit: number) => {
  const { pk, prefix } = collection.devicesOfWorkspace(workspaceId);
  const page = await db.doc.send(
    new QueryCommand({
      TableName: db.table,
      ConsistentRead: true,
      // A key range rather than begins_with: DynamoDB Local reads a begins_with from the partition's start (stores/items.ts).
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
      ExpressionAttributeValues: {
        ':pk': pk,
        ':from': prefix,
        ':to': `${prefix.slice(0, -1)}${String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1)}`,
      },
      Limit: limit,
      ...(after ? { ExclusiveStartKey: { pk, sk: after } } : {}),
    }),
  );
  return { devices: (page.Items ?? []) as Array<Record<string, unknown>>, next: page.LastEvaluatedKey?.sk as string | undefined };
};

/** A device's open conditions (its pointers by uuid: `DEV#<dev>` / `COND#<uuid>`), strongly consistent. */
export const openConditionsOfDevice = async (db: Db, deviceId: string) => {
  const { pk, prefix } = collection.conditionsOfDevice(deviceId);
  const found: Array<{ uuid: string; tag: string; start: string }> = [];
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page = await db.doc.send(
      new QueryCommand({
        TableName: db.table,
        ConsistentRead: true,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': pk, ':prefix': prefix },
        ProjectionExpression: '#uuid, tag, #start',
        ExpressionAttributeNames: { '#uuid': 'uuid', '#start': 'start' },
        ExclusiveStartKey,
      }),
    );
    for (const item of page.Items ?? []) found.push({ uuid: String(item.uuid), tag: String(item.tag), start: String(item.start) });
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return found;
};
