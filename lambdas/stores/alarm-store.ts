import { BatchGetCommand, GetCommand, QueryCommand, TransactWriteCommand, type BatchGetCommandOutput, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import type { AlarmTransition } from '../schemas/alarm-transitions';
import type { Alarm, AlarmListQuery } from '../schemas/alarms';
import { failedConditions } from './errors';
import { getMany, keyedItems, putNew, strip, type Keyed, type ListRead } from './items';
import {
  alarmCountKey,
  alarmKey,
  alarmRuleKey,
  alarmTransitionKey,
  collection,
  INDEX_SHARDS,
  openAlarmGuardKey,
  openAlarmGuardsOfRule,
  REGISTRY_SWEEP_INDEX,
  REGISTRY_TTL_ATTRIBUTE,
  shardOfDevice,
  unclosedAlarmsPartition,
} from './keys';
import type { TransactItem } from './limits-store';

/**
 * An alarm as stored (`WKS#<wks>` / `ALARM#<alm>`): its public fields, its workspace, and who its
 * transitions notify (the rule's `notify` when it opened: a rule deleted since still has its
 * alarms' closes told).
 */
export type AlarmRecord = Alarm & { workspace_id: string; notify: AlarmTransition['notify'] };

/** The guard of a rule's alarm on a device that is not closed (`ALARMOPEN#<alr>#<dev>`): which alarm it is. */
export interface OpenAlarmGuard {
  alarm_id: string;
  workspace_id: string;
  /** When the alarm opened (absent on guards written before it was kept): a `threshold` evaluation ignores points that arrived before. */
  opened_at?: string;
}

/**
 * How long a transition's record is kept (seconds): far longer than any retry of the batch or
 * sweep that wrote it (SQS keeps a message 4 days by default, its DLQ 14).
 */
export const TRANSITION_RECORD_SECONDS = 15 * 24 * 3600;

/** What a transition's write found. */
export type TransitionOutcome =
  /** Written now: the transition is to be told. */
  | 'written'
  /** Written before under the same transition ID (a retried batch or sweep): the stored transition is to be told again. */
  | 'repeated'
  /** Not written: the alarm's state did not allow it (already open, already closed, not open, the rule disabled or gone). */
  | 'refused';

/** The transaction item that records a transition under its ID, once. */
const transitionRecord = (db: Db, transitionId: string, transition: AlarmTransition, now: number): TransactItem =>
  putNew(db, alarmTransitionKey(transitionId), { transition, [REGISTRY_TTL_ATTRIBUTE]: Math.floor(now / 1000) + TRANSITION_RECORD_SECONDS });

/**
 * The transaction item that adds `by` to the count of its severity in the alarm's shard of the
 * workspace's open-alarm counts (the overview's `open_alarms`): 16 shards by alarm ID, so that
 * alarms opening at once in one workspace seldom meet on one item.
 */
const countItem = (db: Db, alarm: Pick<AlarmRecord, 'workspace_id' | 'id' | 'severity'>, by: 1 | -1): TransactItem => ({
  Update: {
    TableName: db.table,
    Key: alarmCountKey(alarm.workspace_id, shardOfDevice(alarm.id)),
    UpdateExpression: 'ADD #severity :by',
    ExpressionAttributeNames: { '#severity': alarm.severity },
    ExpressionAttributeValues: { ':by': by },
  },
});

/** Attempts of a transition's transaction that met another on one of its items (a count's shard) before it fails. */
const CONFLICT_ATTEMPTS = 6;

/** Whether a transaction was canceled only because another one was writing one of its items. */
const conflicted = (error: unknown) => {
  const e = error as { name?: string; CancellationReasons?: Array<{ Code?: string }> };
  return (
    e?.name === 'TransactionCanceledException' && Boolean(e.CancellationReasons?.some((r) => r.Code === 'TransactionConflict')) && !failedConditions(error)
  );
};

/** Runs a transition's transaction whose last item is its record: which of the three it came to. */
const writeTransition = async (db: Db, items: TransactItem[]): Promise<TransitionOutcome> => {
  for (let attempt = 1; ; attempt++) {
    try {
      await db.doc.send(new TransactWriteCommand({ TransactItems: items }));
      return 'written';
    } catch (error) {
      if (conflicted(error) && attempt < CONFLICT_ATTEMPTS) {
        // another transition on the same count's shard: again after a short jittered wait
        await new Promise((resolve) => setTimeout(resolve, (10 + Math.random() * 40) * 2 ** attempt));
        continue;
      }
      const failed = failedConditions(error);
      if (!failed) throw error;
      return failed.includes(items.length - 1) ? 'repeated' : 'refused';
    }
  }
};

/** The workspace's alarms that are not closed, counted by severity (the overview's `open_alarms`): one BatchGetItem of its 16 shards. */
export const readOpenAlarmCounts = async (db: Db, workspaceId: string): Promise<Record<AlarmRecord['severity'], number>> => {
  const shards = await getMany(
    db,
    Array.from({ length: INDEX_SHARDS }, (_, shard) => alarmCountKey(workspaceId, shard)),
    '#c, #ma, #mi, #w',
    { '#c': 'critical', '#ma': 'major', '#mi': 'minor', '#w': 'warning' },
  );
  const counts = { critical: 0, major: 0, minor: 0, warning: 0 };
  // A shard below 0 counts 0: an alarm opened before the counts existed and closed since took one away that was never added.
  for (const shard of shards)
    for (const severity of Object.keys(counts) as Array<keyof typeof counts>) counts[severity] += Math.max(0, Number(shard[severity] ?? 0));
  return counts;
};

/** The transition recorded under an ID, if any (strongly consistent: a retry reads what the first attempt wrote). */
export const getRecordedTransition = async (db: Db, transitionId: string) => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: alarmTransitionKey(transitionId), ConsistentRead: true }));
  return Item?.transition as AlarmTransition | undefined;
};

/**
 * Opens an alarm: its item, the guard of its rule and device (absent: no alarm of theirs is open),
 * and the transition's record, provided the rule still exists and is enabled and the `requires`
 * items' conditions hold (a `threshold` timer still there), all or nothing.
 */
export const putOpenedAlarm = (
  db: Db,
  alarm: AlarmRecord,
  transitionId: string,
  transition: AlarmTransition,
  { now = Date.now(), requires = [] }: { now?: number; requires?: TransactItem[] } = {},
) =>
  writeTransition(db, [
    {
      ConditionCheck: {
        TableName: db.table,
        Key: alarmRuleKey(alarm.workspace_id, alarm.rule_id),
        ConditionExpression: 'enabled = :true',
        ExpressionAttributeValues: { ':true': true },
      },
    },
    ...requires,
    putNew(db, openAlarmGuardKey(alarm.rule_id, alarm.device_id), {
      ...({ alarm_id: alarm.id, workspace_id: alarm.workspace_id, opened_at: alarm.opened_at } satisfies OpenAlarmGuard),
      // Its entry in the workspace's alarms that are not closed (keys.ts), gone with the guard.
      [REGISTRY_SWEEP_INDEX.partitionKey]: unclosedAlarmsPartition(alarm.workspace_id),
      [REGISTRY_SWEEP_INDEX.sortKey]: alarm.id,
    }),
    putNew(db, alarmKey(alarm.workspace_id, alarm.id), alarm),
    countItem(db, alarm, 1),
    transitionRecord(db, transitionId, transition, now),
  ]);

/** The guard of the rule's alarm on the device that is not closed, if one is. */
export const getOpenAlarmGuard = async (db: Db, ruleId: string, deviceId: string) => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: openAlarmGuardKey(ruleId, deviceId), ConsistentRead: true }));
  return Item ? strip<OpenAlarmGuard>(Item) : undefined;
};

export const getAlarmOfWorkspace = async (db: Db, workspaceId: string, alarmId: string) => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: alarmKey(workspaceId, alarmId), ConsistentRead: true }));
  return Item ? strip<AlarmRecord>(Item) : undefined;
};

/**
 * Closes an alarm that is not closed: its guard goes (the rule's next alarm on the device may
 * open), the alarm is closed with its details, and the transition recorded, all or nothing.
 */
export const putClosedAlarm = (db: Db, alarm: AlarmRecord, transitionId: string, transition: AlarmTransition, now = Date.now()) =>
  writeTransition(db, [
    {
      Delete: {
        TableName: db.table,
        Key: openAlarmGuardKey(alarm.rule_id, alarm.device_id),
        ConditionExpression: 'alarm_id = :id',
        ExpressionAttributeValues: { ':id': alarm.id },
      },
    },
    {
      Update: {
        TableName: db.table,
        Key: alarmKey(alarm.workspace_id, alarm.id),
        UpdateExpression: 'SET #status = :closed, closed_at = :at, details = :details',
        ConditionExpression: 'attribute_exists(pk) AND #status <> :closed',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':closed': 'closed', ':at': alarm.closed_at, ':details': alarm.details },
      },
    },
    countItem(db, alarm, -1),
    transitionRecord(db, transitionId, transition, now),
  ]);

/** Acknowledges an open alarm (who, when, the note) and records the transition, all or nothing. */
export const putAcknowledgedAlarm = (db: Db, alarm: AlarmRecord, transitionId: string, transition: AlarmTransition, now = Date.now()) =>
  writeTransition(db, [
    {
      Update: {
        TableName: db.table,
        Key: alarmKey(alarm.workspace_id, alarm.id),
        UpdateExpression: 'SET #status = :acknowledged, acknowledged_at = :at, acknowledged_by = :by, note = :note',
        ConditionExpression: 'attribute_exists(pk) AND #status = :open',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: {
          ':acknowledged': 'acknowledged',
          ':open': 'open',
          ':at': alarm.acknowledged_at,
          ':by': alarm.acknowledged_by,
          ':note': alarm.note,
        },
      },
    },
    transitionRecord(db, transitionId, transition, now),
  ]);

/** The filters of the alarm list as a FilterExpression (undefined: none). */
const filterOf = (filters: Omit<AlarmListQuery, 'limit' | 'cursor'>): Partial<QueryCommandInput> => {
  const clauses: string[] = [];
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const add = (attribute: string, op: string, value: unknown, name = attribute) => {
    names[`#${name}`] = attribute;
    values[`:${name}`] = value;
    clauses.push(`#${name} ${op} :${name}`);
  };
  if (filters.status !== undefined) add('status', '=', filters.status);
  if (filters.rule !== undefined) add('rule_id', '=', filters.rule);
  if (filters.device !== undefined) add('device_id', '=', filters.device);
  if (filters.severity !== undefined) add('severity', '=', filters.severity);
  if (filters.start !== undefined) add('opened_at', '>=', filters.start, 'start');
  if (filters.end !== undefined) add('opened_at', '<', filters.end, 'end');
  return clauses.length ? { FilterExpression: clauses.join(' AND '), ExpressionAttributeNames: names, ExpressionAttributeValues: values } : {};
};

/**
 * The workspace's alarms that pass the filters one by one, newest first (their IDs sort by when
 * they opened), read page by page.
 */
export const readAlarmsOfWorkspace = (db: Db, workspaceId: string, filters: Omit<AlarmListQuery, 'limit' | 'cursor'>, read: ListRead) => {
  const { pk, prefix } = collection.alarmsOfWorkspace(workspaceId);
  return keyedItems<AlarmRecord>(db, { pk, prefix, ...read, extra: { ScanIndexForward: false, ...filterOf(filters) } });
};

/**
 * The alarms of a rule that are not closed, one by one: their IDs and devices, as their guards'
 * entries in the sweep index tell them (keys.ts `ALARMS#<workspace>`, each entry keeping its
 * guard's table key `ALARMOPEN#<alr>#<dev>`), page by page. No alarm is read, and a closed one
 * has no entry: the workspace's closed alarms cost nothing. The index is eventually consistent:
 * an alarm opened a moment ago may not be there yet.
 */
export async function* readUnclosedAlarmsOfRule(db: Db, workspaceId: string, ruleId: string): AsyncGenerator<{ id: string; device_id: string }> {
  const { name: IndexName, partitionKey, sortKey } = REGISTRY_SWEEP_INDEX;
  const guards = openAlarmGuardsOfRule(ruleId);
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page = await db.doc.send(
      new QueryCommand({
        TableName: db.table,
        IndexName,
        KeyConditionExpression: '#pk = :pk',
        // The table's key is in every entry of a keys-only index: the other rules' entries are dropped here.
        FilterExpression: 'begins_with(#guard, :guards)',
        ExpressionAttributeNames: { '#pk': partitionKey, '#guard': 'pk' },
        ExpressionAttributeValues: { ':pk': unclosedAlarmsPartition(workspaceId), ':guards': guards },
        ExclusiveStartKey,
      }),
    );
    for (const item of page.Items ?? []) yield { id: item[sortKey] as string, device_id: (item.pk as string).slice(guards.length) };
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
}

type AlarmFilters = Omit<AlarmListQuery, 'limit' | 'cursor'>;

/** Whether an alarm passes the list's filters (those of {@link filterOf}, on an item read by key). */
const passes = (alarm: AlarmRecord, f: AlarmFilters) =>
  (f.status === undefined || alarm.status === f.status) &&
  (f.rule === undefined || alarm.rule_id === f.rule) &&
  (f.device === undefined || alarm.device_id === f.device) &&
  (f.severity === undefined || alarm.severity === f.severity) &&
  (f.start === undefined || alarm.opened_at >= f.start) &&
  (f.end === undefined || alarm.opened_at < f.end);

// BatchGetItem's most keys a request.
const BATCH_GET_LIMIT = 100;

/** A workspace's alarms by ID, strongly consistent (a close a moment ago reads closed), 100 a request. */
const getAlarms = async (db: Db, workspaceId: string, ids: string[]) => {
  const found = new Map<string, AlarmRecord>();
  for (let i = 0; i < ids.length; i += BATCH_GET_LIMIT) {
    let Keys: Array<Record<string, unknown>> | undefined = ids.slice(i, i + BATCH_GET_LIMIT).map((id) => ({ ...alarmKey(workspaceId, id) }));
    for (let attempt = 0; Keys?.length; attempt++) {
      if (attempt) await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 25 * 2 ** attempt)));
      const answer: BatchGetCommandOutput = await db.doc.send(new BatchGetCommand({ RequestItems: { [db.table]: { Keys, ConsistentRead: true } } }));
      for (const item of answer.Responses?.[db.table] ?? []) found.set(item.id as string, strip<AlarmRecord>(item));
      Keys = answer.UnprocessedKeys?.[db.table]?.Keys;
    }
  }
  return found;
};

/**
 * The workspace's alarms that are not closed and pass the filters, newest first, read page by page
 * from their guards' entries in the sweep index (keys.ts `ALARMS#<workspace>`) and then by key in
 * one strongly consistent BatchGetItem a page: a closed alarm costs no read. Each item is keyed by
 * its table sort key (`ALARM#<alm>`), as {@link readAlarmsOfWorkspace}'s, so one cursor serves both;
 * `after` reads on from the alarms older than its alarm. The index is eventually consistent: an
 * alarm opened a moment ago may show an instant later, one closed a moment ago reads closed and is
 * left out.
 */
export async function* readUnclosedAlarmsOfWorkspace(
  db: Db,
  workspaceId: string,
  filters: AlarmFilters,
  { after, pageSize }: ListRead,
): AsyncGenerator<Keyed<AlarmRecord>> {
  const { prefix } = collection.alarmsOfWorkspace(workspaceId);
  const { name: IndexName, partitionKey, sortKey } = REGISTRY_SWEEP_INDEX;
  const older = after?.slice(prefix.length);
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page = await db.doc.send(
      new QueryCommand({
        TableName: db.table,
        IndexName,
        KeyConditionExpression: older === undefined ? '#pk = :pk' : '#pk = :pk AND #sk < :older',
        ExpressionAttributeNames: { '#pk': partitionKey, ...(older === undefined ? {} : { '#sk': sortKey }) },
        ExpressionAttributeValues: { ':pk': unclosedAlarmsPartition(workspaceId), ...(older === undefined ? {} : { ':older': older }) },
        ScanIndexForward: false,
        ...(pageSize ? { Limit: pageSize } : {}),
        ExclusiveStartKey,
      }),
    );
    const ids = (page.Items ?? []).map((item) => item[sortKey] as string);
    const alarms = await getAlarms(db, workspaceId, ids);
    for (const id of ids) {
      const alarm = alarms.get(id);
      if (alarm && passes(alarm, filters)) yield { sk: `${prefix}${id}`, value: alarm };
    }
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
}
