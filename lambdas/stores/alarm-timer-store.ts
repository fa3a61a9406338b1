import { BatchGetCommand, DeleteCommand, GetCommand, PutCommand, UpdateCommand, type BatchGetCommandOutput } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import { isConditionFailed } from './errors';
import {
  ALARM_TIMER_SORT_KEY_PREFIX,
  REGISTRY_SWEEP_INDEX,
  alarmTimerKey,
  alarmTimerPartition,
  conditionKey,
  deviceKey,
  shardOfDevice,
  sweepEntry,
  type ItemKey,
} from './keys';
import type { SweepEntry } from './sweep-store';

/** The kinds of alarm rule a timer serves (a `threshold` rule is evaluated at ingest). */
export type TimedKind = 'offline' | 'silent' | 'condition';

/**
 * One alarm rule's timer on one device (`DEV#<dev>` / `ALARMTIMER#<alr>`), in the sweep index
 * (partition `DUE#A<shard>`, sort key `<due>#<workspace>`) until it is deleted: the sweep reads it
 * when due, never the devices that have none.
 */
export interface AlarmTimer {
  workspace_id: string;
  account_id: string;
  device_id: string;
  rule_id: string;
  kind: TimedKind;
  /** When what the rule watches began: the disconnection, the last point seen, the condition's start. */
  since: string;
  /** When it is due (ISO 8601 UTC). */
  due_at: string;
  /** A `silent` rule's timer while its alarm is open: due a minute ahead, to close it at the next point. */
  watching?: 'close';
  /** A `condition` rule's timer: the condition it waits on. */
  condition_uuid?: string;
}

/** What a due timer is, as its index entry tells it (no read): the device, the rule, the workspace. */
export interface DueTimer {
  deviceId: string;
  ruleId: string;
  workspaceId: string;
  /** Its index sort key as seen: a change of the timer is written only over it. */
  seen: string;
}

/** The index entry of a timer due at `dueAt` (ms) on a device of a workspace. */
const timerEntry = (dueAt: number, deviceId: string, workspaceId: string) => sweepEntry(dueAt, alarmTimerPartition(shardOfDevice(deviceId)), `#${workspaceId}`);

/** What a due entry of an alarm timer partition names. */
export const dueTimerOf = (entry: SweepEntry): DueTimer => ({
  deviceId: entry.pk.slice('DEV#'.length),
  ruleId: entry.sk.slice(ALARM_TIMER_SORT_KEY_PREFIX.length),
  workspaceId: entry.due.slice(entry.due.indexOf('#') + 1),
  seen: entry.due,
});

/** A timer item as written: its fields, its index entry. */
const itemOf = (timer: Omit<AlarmTimer, 'due_at'>, dueAt: number) => ({
  ...alarmTimerKey(timer.device_id, timer.rule_id),
  ...timer,
  due_at: new Date(dueAt).toISOString(),
  ...timerEntry(dueAt, timer.device_id, timer.workspace_id),
});

/**
 * Starts a rule's timer on a device, due at `dueAt` (ms), unless the device already has one for
 * the rule (a retried stream batch, or an earlier start still running): answers whether it wrote.
 * A `condition` timer replaces one of the same condition (its uuid opened again at another start).
 */
export const putTimerIfAbsent = async (db: Db, timer: Omit<AlarmTimer, 'due_at'>, dueAt: number) => {
  const same = timer.condition_uuid !== undefined;
  try {
    await db.doc.send(
      new PutCommand({
        TableName: db.table,
        Item: itemOf(timer, dueAt),
        ConditionExpression: same ? 'attribute_not_exists(pk) OR condition_uuid = :uuid' : 'attribute_not_exists(pk)',
        ...(same ? { ExpressionAttributeValues: { ':uuid': timer.condition_uuid } } : {}),
      }),
    );
    return true;
  } catch (error) {
    if (isConditionFailed(error)) return false;
    throw error;
  }
};

/**
 * Moves a timer to `dueAt` (ms) with a new start and watch, only if its index entry is still the
 * one a sweep saw (`seen`): a timer deleted or moved meanwhile is left as it is. Answers whether it moved.
 */
export const moveTimer = async (db: Db, due: DueTimer, dueAt: number, { since, watching }: { since: string; watching?: 'close' }): Promise<boolean> => {
  const entry = timerEntry(dueAt, due.deviceId, due.workspaceId);
  try {
    await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: alarmTimerKey(due.deviceId, due.ruleId),
        UpdateExpression: `SET due_at = :due, since = :since, #ssk = :ssk${watching ? ', watching = :watching' : ' REMOVE watching'}`,
        ConditionExpression: '#ssk = :seen',
        ExpressionAttributeNames: { '#ssk': REGISTRY_SWEEP_INDEX.sortKey },
        ExpressionAttributeValues: {
          ':due': new Date(dueAt).toISOString(),
          ':since': since,
          ':ssk': entry[REGISTRY_SWEEP_INDEX.sortKey],
          ':seen': due.seen,
          ...(watching ? { ':watching': watching } : {}),
        },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionFailed(error)) return false;
    throw error;
  }
};

/**
 * Deletes a rule's timer on a device: whatever it is (the device reconnected), only the timer of
 * one condition (`{ condition }`: it closed), or only if its index entry is still the one a sweep
 * saw (`{ seen }`). Answers whether it deleted.
 */
export const deleteTimer = async (db: Db, deviceId: string, ruleId: string, only: { seen?: string; condition?: string } = {}) => {
  const [field, value] = only.seen !== undefined ? [REGISTRY_SWEEP_INDEX.sortKey, only.seen] : ['condition_uuid', only.condition];
  try {
    await db.doc.send(
      new DeleteCommand({
        TableName: db.table,
        Key: alarmTimerKey(deviceId, ruleId),
        ...(value === undefined
          ? {}
          : { ConditionExpression: '#field = :value', ExpressionAttributeNames: { '#field': field }, ExpressionAttributeValues: { ':value': value } }),
      }),
    );
    return true;
  } catch (error) {
    if (isConditionFailed(error)) return false;
    throw error;
  }
};

/** BatchGetItem takes at most 100 keys: the timer and the device of 50 due timers. */
export const DUE_TIMERS_PER_READ = 50;

/** What a sweep reads of a due timer's device: whether and since when it is connected, and its last point's arrival. */
export interface TimedDevice {
  id: string;
  account_id: string;
  fleet_id: string;
  connected?: boolean;
  last_connected_at?: string;
  last_disconnected_at?: string;
  last_seen_at?: string;
}

const DEVICE_FIELDS = ['id', 'account_id', 'fleet_id', 'connected', 'last_connected_at', 'last_disconnected_at', 'last_seen_at'];
const TIMER_FIELDS = ['workspace_id', 'account_id', 'device_id', 'rule_id', 'kind', 'since', 'due_at', 'watching', 'condition_uuid', 'sweep_sk'];

/**
 * The timers and devices of up to {@link DUE_TIMERS_PER_READ} due timers, strongly consistent (a
 * device that reconnected a moment ago reads so), in one BatchGetItem (keys left unprocessed are
 * asked again): so a sweep costs a read request per 50 due timers, whatever the fleet's size.
 * Answers each due timer's timer (undefined when deleted meanwhile) and device (undefined when gone).
 */
export const readDueTimers = async (db: Db, due: DueTimer[]) => {
  if (due.length > DUE_TIMERS_PER_READ) throw new Error(`At most ${DUE_TIMERS_PER_READ} timers a read.`);
  const names = Object.fromEntries([...new Set([...DEVICE_FIELDS, ...TIMER_FIELDS, 'pk', 'sk'])].map((f) => [`#${f}`, f]));
  const found = new Map<string, Record<string, unknown>>();
  const id = ({ pk, sk }: ItemKey) => `${pk}\n${sk}`;
  let Keys: Array<Record<string, unknown>> | undefined = [
    ...new Map(
      due.flatMap((d) => [alarmTimerKey(d.deviceId, d.ruleId), deviceKey(d.workspaceId, d.deviceId)]).map((key) => [id(key), { pk: key.pk, sk: key.sk }]),
    ).values(),
  ];
  for (let attempt = 0; Keys?.length; attempt++) {
    if (attempt) await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 25 * 2 ** attempt)));
    const answer: BatchGetCommandOutput = await db.doc.send(
      new BatchGetCommand({
        RequestItems: { [db.table]: { Keys, ConsistentRead: true, ProjectionExpression: Object.keys(names).join(', '), ExpressionAttributeNames: names } },
      }),
    );
    for (const item of answer.Responses?.[db.table] ?? []) found.set(id(item as ItemKey), item);
    Keys = answer.UnprocessedKeys?.[db.table]?.Keys;
  }
  return due.map((d) => {
    const timer = found.get(id(alarmTimerKey(d.deviceId, d.ruleId))) as (AlarmTimer & { sweep_sk: string }) | undefined;
    const device = found.get(id(deviceKey(d.workspaceId, d.deviceId))) as TimedDevice | undefined;
    return { due: d, timer, device };
  });
};

/**
 * When a device's condition `uuid` that is still open started (its open pointer by uuid, strongly
 * consistent), or undefined when it is closed or unknown: what a `condition` rule's timer waits on.
 */
export const openConditionStart = async (db: Db, deviceId: string, uuid: string) => {
  const { Item } = await db.doc.send(
    new GetCommand({
      TableName: db.table,
      Key: conditionKey(deviceId, uuid),
      ConsistentRead: true,
      ProjectionExpression: '#start',
      ExpressionAttributeNames: { '#start': 'start' },
    }),
  );
  return Item?.start as string | undefined;
};
