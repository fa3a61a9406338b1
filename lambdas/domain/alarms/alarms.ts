import type { Db } from '../../shared/clients';
import { ConflictError, NotFoundError } from '../../shared/errors';
import type { Caller } from '../../shared/http';
import { newId, nowIso } from '../../shared/ids';
import type { StreamedList } from '../../shared/json-stream';
import type { AlarmTransition } from '../../schemas/alarm-transitions';
import type { AcknowledgeAlarmBody, Alarm, AlarmListQuery } from '../../schemas/alarms';
import { sendAlarmTransition } from '../../stores/alarm-notification-queue';
import type { AlarmRuleRecord } from '../../stores/alarm-rule-store';
import {
  getAlarmOfWorkspace,
  getOpenAlarmGuard,
  getRecordedTransition,
  putAcknowledgedAlarm,
  putClosedAlarm,
  putOpenedAlarm,
  readAlarmsOfWorkspace,
  readUnclosedAlarmsOfWorkspace,
  readUnclosedAlarmsOfRule,
  type AlarmRecord,
  type TransitionOutcome,
} from '../../stores/alarm-store';
import { getApiKeyOfWorkspace } from '../../stores/api-key-store';
import type { TransactItem } from '../../stores/limits-store';
import { collection } from '../../stores/keys';
import { getUserAccount } from '../../stores/user-store';
import { mapKeyed, pageSizeOf, paginate, startOf } from '../registry/lists';
import { requireWorkspace } from '../tenancy/workspaces';

/**
 * What the alarms' transitions need: the registry, and how a transition is told (its message on
 * the notifications queue; a test may watch it). `now` gives the transitions' time.
 */
export interface AlarmDeps {
  db: Db;
  notify: (transition: AlarmTransition) => Promise<void>;
  now?: () => string;
}

/** The alarms' dependencies of a handler: transitions go to the notifications queue. */
export const alarmDeps = (db: Db): AlarmDeps => ({ db, notify: sendAlarmTransition });

/** Where an alarm is: the device and its fleet, in its workspace. */
export interface AlarmPlace {
  workspace_id: string;
  fleet_id: string;
  device_id: string;
}

/** An alarm as the API answers it. */
export const toAlarm = ({ workspace_id: _w, notify: _n, ...alarm }: AlarmRecord): Alarm => alarm;

/** The message of one transition of an alarm (as it is after it), once per event: its ID is `<alarm>:<event>`. */
export const transitionOf = (alarm: AlarmRecord, event: AlarmTransition['event'], at: string): AlarmTransition => {
  const { note: _note, ...told } = toAlarm(alarm);
  return { id: `${alarm.id}:${event}`, event, at, workspace_id: alarm.workspace_id, alarm: told, notify: alarm.notify };
};

/**
 * Tells a transition that was written, or written before under the same ID (the retry of a
 * batch whose telling failed): the notifier is idempotent by the transition's ID.
 */
const tell = async (deps: AlarmDeps, outcome: TransitionOutcome, transitionId: string, transition: AlarmTransition) => {
  if (outcome === 'refused') return undefined;
  const told = outcome === 'written' ? transition : await getRecordedTransition(deps.db, transitionId);
  if (told) await deps.notify(told);
  return told;
};

/**
 * Opens an alarm of `rule` on a device, unless one of the rule's on the device is not closed (the
 * guard item decides, in the same transaction), the rule is no longer enabled, or a condition of
 * `requires` fails (a transaction's ConditionCheck items: a `threshold` rule's timer still there).
 * Written once per `transitionId`: a retried batch or sweep with the same ID opens nothing more,
 * and tells the transition again (in case its first telling failed).
 * @returns the alarm opened under this transition ID, or undefined when none opened: built from
 * what was written (no read), or, when an earlier attempt wrote it, read as it is now.
 * @throws when the transition cannot be told: the caller retries with the same ID.
 */
export const openAlarm = async (
  deps: AlarmDeps,
  rule: AlarmRuleRecord,
  place: AlarmPlace,
  { details, transitionId, requires }: { details: Record<string, unknown>; transitionId: string; requires?: TransactItem[] },
): Promise<Alarm | undefined> => {
  const at = deps.now?.() ?? nowIso();
  const alarm: AlarmRecord = {
    id: newId('alm', at),
    rule_id: rule.id,
    rule_name: rule.name,
    kind: rule.kind,
    severity: rule.severity,
    device_id: place.device_id,
    fleet_id: place.fleet_id,
    status: 'open',
    opened_at: at,
    acknowledged_at: null,
    acknowledged_by: null,
    note: null,
    closed_at: null,
    details,
    workspace_id: rule.workspace_id,
    notify: rule.notify,
  };
  const transition = transitionOf(alarm, 'opened', at);
  const outcome = await putOpenedAlarm(deps.db, alarm, transitionId, transition, { requires });
  const told = await tell(deps, outcome, transitionId, transition);
  if (!told) return undefined;
  // Written now: the alarm is what was written. Written by an earlier attempt: as it is now.
  if (outcome === 'written') return toAlarm(alarm);
  const stored = await getAlarmOfWorkspace(deps.db, told.workspace_id, told.alarm.id);
  return stored && toAlarm(stored);
};

/**
 * Closes the rule's alarm on the device that is not closed, if there is one, adding `details` to
 * its own. Written once per `transitionId`, as {@link openAlarm}.
 * @returns the alarm as closed, or undefined when none was open.
 * @throws when the transition cannot be told: the caller retries with the same ID.
 */
export const closeAlarm = async (
  deps: AlarmDeps,
  ruleId: string,
  deviceId: string,
  { transitionId, details = {} }: { transitionId: string; details?: Record<string, unknown> },
): Promise<Alarm | undefined> => {
  const guard = await getOpenAlarmGuard(deps.db, ruleId, deviceId);
  if (!guard) {
    // Nothing open: the close may have been written by an earlier attempt whose telling failed.
    const again = await getRecordedTransition(deps.db, transitionId);
    if (again?.event !== 'closed') return undefined;
    await deps.notify(again);
    return { ...again.alarm, note: null } as Alarm;
  }
  const open = await getAlarmOfWorkspace(deps.db, guard.workspace_id, guard.alarm_id);
  if (!open) return undefined;
  const at = deps.now?.() ?? nowIso();
  const closed: AlarmRecord = { ...open, status: 'closed', closed_at: at, details: { ...open.details, ...details } };
  const transition = transitionOf(closed, 'closed', at);
  const told = await tell(deps, await putClosedAlarm(deps.db, closed, transitionId, transition), transitionId, transition);
  return told ? toAlarm(closed) : undefined;
};

/** How many closes of a disabled or deleted rule's alarms run at once. */
const CLOSE_CONCURRENCY = 16;

/**
 * Closes every alarm of a rule that is not closed (the rule was disabled or deleted: `reason`
 * goes into their details), a few at a time, found through their guards' index entries: the
 * workspace's closed alarms and other rules' alarms cost no read.
 */
export const closeAlarmsOfRule = async (deps: AlarmDeps, workspaceId: string, ruleId: string, reason: string) => {
  const source = readUnclosedAlarmsOfRule(deps.db, workspaceId, ruleId)[Symbol.asyncIterator]();
  const worker = async () => {
    for (let next = await source.next(); !next.done; next = await source.next()) {
      const alarm = next.value;
      await closeAlarm(deps, ruleId, alarm.device_id, { transitionId: `${alarm.id}:closed`, details: { closed_by: reason } });
    }
  };
  await Promise.all(Array.from({ length: CLOSE_CONCURRENCY }, worker));
};

/**
 * The workspace's alarms, newest first, filtered (status, rule, device, severity, opened between
 * start and end), streamed; a page of them when the query asks. An `open` or `acknowledged` list
 * reads only the alarms that are not closed (their guards' index entries).
 * @throws NotFoundError when the workspace is not the caller's; ValidationError for a cursor of another list.
 */
export const listAlarms = async (db: Db, caller: Caller, workspaceId: string, query: AlarmListQuery): Promise<StreamedList<Alarm>> => {
  await requireWorkspace(db, caller, workspaceId);
  const { limit, cursor, ...filters } = query;
  const page = { limit, cursor };
  const list = `alarms/${workspaceId}`;
  const after = startOf(list, page, collection.alarmsOfWorkspace(workspaceId).prefix);
  const read = { after, pageSize: pageSizeOf(page) };
  // Open or acknowledged: only the alarms that are not closed are read (closed ones cost nothing).
  const source =
    filters.status === 'open' || filters.status === 'acknowledged'
      ? readUnclosedAlarmsOfWorkspace(db, workspaceId, filters, read)
      : readAlarmsOfWorkspace(db, workspaceId, filters, read);
  return paginate(list, mapKeyed(source, toAlarm), page);
};

/** The name an acknowledgement is made by: the API key's, or the console user's e-mail address. */
const callerName = async (db: Db, caller: Caller, workspaceId: string) => {
  if (caller.keyId !== undefined) {
    const key = await getApiKeyOfWorkspace(db, caller.workspaceId ?? workspaceId, caller.keyId);
    return key?.name ?? caller.keyId;
  }
  const user = caller.userId === undefined ? undefined : await getUserAccount(db, caller.userId);
  return user?.email ?? caller.userId ?? 'unknown';
};

/**
 * Acknowledges an open alarm with an optional note, by the caller's name. An alarm already
 * acknowledged answers as it is (its transition told again, once per alarm downstream).
 * @throws NotFoundError when the workspace or the alarm is not the caller's.
 * @throws ConflictError when the alarm is closed.
 */
export const acknowledgeAlarm = async (deps: AlarmDeps, caller: Caller, workspaceId: string, alarmId: string, { note }: AcknowledgeAlarmBody) => {
  await requireWorkspace(deps.db, caller, workspaceId);
  const alarm = await getAlarmOfWorkspace(deps.db, workspaceId, alarmId);
  if (!alarm) throw new NotFoundError(`Alarm ${alarmId} not found.`);
  const closedAlready = () =>
    new ConflictError(`Alarm ${alarmId} is closed: there is nothing to acknowledge.`, { details: [{ field: 'path.alarmId', message: 'Closed.' }] });
  if (alarm.status === 'closed') throw closedAlready();
  const transitionId = `${alarmId}:acknowledged`;
  if (alarm.status === 'open') {
    const at = deps.now?.() ?? nowIso();
    const acknowledged: AlarmRecord = {
      ...alarm,
      status: 'acknowledged',
      acknowledged_at: at,
      acknowledged_by: await callerName(deps.db, caller, workspaceId),
      note: note ?? null,
    };
    const transition = transitionOf(acknowledged, 'acknowledged', at);
    const outcome = await putAcknowledgedAlarm(deps.db, acknowledged, transitionId, transition);
    if (outcome === 'written') {
      await deps.notify(transition);
      return toAlarm(acknowledged);
    }
  }
  // Acknowledged before (or meanwhile), or closed meanwhile.
  const now = await getAlarmOfWorkspace(deps.db, workspaceId, alarmId);
  if (!now) throw new NotFoundError(`Alarm ${alarmId} not found.`);
  if (now.status === 'closed') throw closedAlready();
  const recorded = await getRecordedTransition(deps.db, transitionId);
  if (recorded) await deps.notify(recorded);
  return toAlarm(now);
};
