import { BatchGetCommand, DeleteCommand, GetCommand, PutCommand, UpdateCommand, type BatchGetCommandOutput } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import { isConditionFailed } from './errors';
import { queryPages } from './items';
import {
  ALARM_TIMER_SORT_KEY_PREFIX,
  REGISTRY_SWEEP_INDEX,
  alarmTimerKey,
  alarmTimerPartition,
  conditionKey,
  deviceKey,
  openAlarmGuardKey,
  shardOfDevice,
  sweepEntry,
  type ItemKey,
} from './keys';
import type { SweepEntry } from './sweep-store';

/** The kinds of alarm rule a timer serves (a `threshold` rule's only while its `for_seconds` runs: its points are evaluated at ingest). */
export type TimedKind = 'offline' | 'silent' | 'condition' | 'threshold';

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
  /** A `threshold` rule's timer: what the point that started it read (the alarm's details when it opens). */
  details?: Record<string, unknown>;
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

/** Which of a rule's timers on a device: the one a sweep saw (its index entry), or the one started at `since`. */
export type TimerVersion = { seen: string } | { since: string };

const versionCondition = (only: TimerVersion | { condition?: string }): [string, string | undefined] =>
  'seen' in only ? [REGISTRY_SWEEP_INDEX.sortKey, only.seen] : 'since' in only ? ['since', only.since] : ['condition_uuid', only.condition];

/**
 * The transaction item that holds a transition to a rule's timer on a device still being the one
 * seen (a `threshold` alarm opens only while the timer that waited for it is there: a point back
 * on the good side deleted it).
 */
export const timerStillThere = (db: Db, deviceId: string, ruleId: string, only: TimerVersion) => {
  const [field, value] = versionCondition(only);
  return {
    ConditionCheck: {
      TableName: db.table,
      Key: alarmTimerKey(deviceId, ruleId),
      ConditionExpression: '#field = :value',
      ExpressionAttributeNames: { '#field': field },
      ExpressionAttributeValues: { ':value': value },
    },
  };
};

/**
 * Deletes a rule's timer on a device: whatever it is (the device reconnected), only the timer of
 * one condition (`{ condition }`: it closed), only if its index entry is still the one a sweep
 * saw (`{ seen }`), or only the one started at `since`. Answers whether it deleted.
 */
export const deleteTimer = async (db: Db, deviceId: string, ruleId: string, only: TimerVersion | { condition?: string } = {}) => {
  const [field, value] = versionCondition(only);
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
  /** Per data tag a `silent` rule names: its newest point's arrival (domain/alarms/silent-tags.ts). */
  last_seen_tags?: Record<string, string>;
}

const DEVICE_FIELDS = ['id', 'account_id', 'fleet_id', 'connected', 'last_connected_at', 'last_disconnected_at', 'last_seen_at', 'last_seen_tags'];
const TIMER_FIELDS = ['workspace_id', 'account_id', 'device_id', 'rule_id', 'kind', 'since', 'due_at', 'watching', 'condition_uuid', 'details', 'sweep_sk'];

const itemId = ({ pk, sk }: ItemKey) => `${pk}\n${sk}`;

/**
 * Items by key, strongly consistent, in one BatchGetItem (at most 100 keys; keys left unprocessed
 * are asked again after a backoff), only `fields` of each (with its keys): found by `pk\nsk`.
 */
const batchGetConsistent = async (db: Db, keys: ItemKey[], fields: string[]) => {
  const names = Object.fromEntries([...new Set([...fields, 'pk', 'sk'])].map((f) => [`#${f}`, f]));
  const found = new Map<string, Record<string, unknown>>();
  let Keys: Array<Record<string, unknown>> | undefined = [...new Map(keys.map((key) => [itemId(key), { pk: key.pk, sk: key.sk }])).values()];
  for (let attempt = 0; Keys?.length; attempt++) {
    if (attempt) await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 25 * 2 ** attempt)));
    const answer: BatchGetCommandOutput = await db.doc.send(
      new BatchGetCommand({
        RequestItems: { [db.table]: { Keys, ConsistentRead: true, ProjectionExpression: Object.keys(names).join(', '), ExpressionAttributeNames: names } },
      }),
    );
    for (const item of answer.Responses?.[db.table] ?? []) found.set(itemId(item as ItemKey), item);
    Keys = answer.UnprocessedKeys?.[db.table]?.Keys;
  }
  return found;
};

/**
 * The timers and devices of up to {@link DUE_TIMERS_PER_READ} due timers, strongly consistent (a
 * device that reconnected a moment ago reads so), in one BatchGetItem (keys left unprocessed are
 * asked again): so a sweep costs a read request per 50 due timers, whatever the fleet's size.
 * Answers each due timer's timer (undefined when deleted meanwhile) and device (undefined when gone).
 */
export const readDueTimers = async (db: Db, due: DueTimer[]) => {
  if (due.length > DUE_TIMERS_PER_READ) throw new Error(`At most ${DUE_TIMERS_PER_READ} timers a read.`);
  const found = await batchGetConsistent(
    db,
    due.flatMap((d) => [alarmTimerKey(d.deviceId, d.ruleId), deviceKey(d.workspaceId, d.deviceId)]),
    [...DEVICE_FIELDS, ...TIMER_FIELDS],
  );
  return due.map((d) => {
    const timer = found.get(itemId(alarmTimerKey(d.deviceId, d.ruleId))) as (AlarmTimer & { sweep_sk: string }) | undefined;
    const device = found.get(itemId(deviceKey(d.workspaceId, d.deviceId))) as TimedDevice | undefined;
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

/** A rule and a device whose alarm state a `threshold` evaluation asks for. */
export interface RuleOnDevice {
  ruleId: string;
  deviceId: string;
}

/** What is stored of a `threshold` rule's alarm on a device: whether one is not closed (its guard), and its timer while `for_seconds` runs. */
export interface ThresholdState {
  open: boolean;
  /** When the open alarm opened, if its guard says. */
  opened_at?: string;
  timer?: { since: string; due_at: string; details?: Record<string, unknown> };
}

/** Rules on devices whose state one read asks for: their guard and their timer, 100 keys. */
export const STATES_PER_READ = 50;

/**
 * The alarm state of up to {@link STATES_PER_READ} rules on devices, strongly consistent, in one
 * BatchGetItem of their open-alarm guards and timers: what an ingest container reads of a device
 * it knows nothing of (domain/alarms/threshold.ts), in the order asked.
 */
export const readThresholdStates = async (db: Db, pairs: RuleOnDevice[]): Promise<ThresholdState[]> => {
  if (pairs.length > STATES_PER_READ) throw new Error(`At most ${STATES_PER_READ} states a read.`);
  if (!pairs.length) return [];
  const found = await batchGetConsistent(
    db,
    pairs.flatMap((p) => [openAlarmGuardKey(p.ruleId, p.deviceId), alarmTimerKey(p.deviceId, p.ruleId)]),
    ['alarm_id', 'opened_at', 'since', 'due_at', 'details'],
  );
  return pairs.map((p) => {
    const timer = found.get(itemId(alarmTimerKey(p.deviceId, p.ruleId)));
    const guard = found.get(itemId(openAlarmGuardKey(p.ruleId, p.deviceId)));
    return {
      open: guard !== undefined,
      ...(typeof guard?.opened_at === 'string' ? { opened_at: guard.opened_at } : {}),
      ...(timer
        ? { timer: { since: timer.since as string, due_at: timer.due_at as string, details: timer.details as Record<string, unknown> | undefined } }
        : {}),
    };
  });
};

/** Deletes every alarm timer of a device (it was deleted): one query of its timers, then a delete each. */
export const deleteTimersOfDevice = async (db: Db, deviceId: string) => {
  const { pk } = alarmTimerKey(deviceId, '');
  let deleted = 0;
  for await (const page of queryPages(db, { pk, prefix: ALARM_TIMER_SORT_KEY_PREFIX, extra: { ProjectionExpression: 'pk, sk' } }))
    for (const item of page) {
      await db.doc.send(new DeleteCommand({ TableName: db.table, Key: { pk: item.pk, sk: item.sk } }));
      deleted += 1;
    }
  return deleted;
};
