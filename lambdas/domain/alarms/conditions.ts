import type { Db } from '../../shared/clients';
import { ValidationError } from '../../shared/errors';
import type { Caller } from '../../shared/http';
import type { StreamedList } from '../../shared/json-stream';
import type { Condition, ConditionsQuery } from '../../schemas/condition';
import {
  conditionRange,
  conditionsCollection,
  getConditionPointers,
  getConditionRecord,
  putClosedConditionRecord,
  putEarlyClose,
  putOpenConditionRecord,
  readConditions,
  type ConditionPointer,
  type ConditionRecord,
} from '../../stores/condition-store';
import { logDeviceEvent } from '../registry/device-events';
import { mapKeyed, pageSizeOf, paginate, startOf } from '../registry/lists';
import { requireWorkspace } from '../tenancy/workspaces';
import type { DevicePlace } from '../webhooks/events';

/** What opening and closing conditions need. */
export interface ConditionDeps {
  db: Db;
}

/** A condition's opening, as either door reads it (times normalized to RFC 3339 UTC). */
export interface ConditionOpening {
  uuid: string;
  tag: string;
  payload?: unknown;
  start: string;
}

/** A condition's closing, as either door reads it. */
export interface ConditionClosing {
  uuid: string;
  finish_payload?: unknown;
  finish: string;
}

/** A condition as the API answers it: its record without the workspace. */
export const conditionOf = ({ workspace_id: _ws, ...rest }: ConditionRecord): Condition => rest;

/**
 * Opens a device's condition (spec/fleet-state.md §4), from the MQTT door's `condition` message
 * or the HTTPS door's `POST /device/conditions`: its record in the workspace's list and its open
 * pointer on the device (what `#conditions` answers), then a `condition` entry in the device's
 * event log. The same opening again (a redelivered message) writes the same items; the same uuid
 * at another start replaces the open condition; an opening that arrives after its own close (same
 * uuid and start) changes nothing and answers the closed condition. An opening whose close came
 * first over MQTT (kept by `closeCondition`) is opened and then closed by it, when it started by
 * that close's finish.
 * @returns the condition's record: the seam where alarms (rules of kind `condition`) hook on.
 */
export const openCondition = async (
  deps: ConditionDeps,
  place: DevicePlace,
  opening: ConditionOpening,
  arrival = new Date().toISOString(),
): Promise<ConditionRecord> => {
  const start = new Date(opening.start).toISOString();
  const { open, closed, early } = await getConditionPointers(deps.db, place.device_id, opening.uuid);
  if (closed && closed.start === start) {
    const record = await getConditionRecord(deps.db, place.workspace_id, place.device_id, closed);
    if (record) return record;
  }
  const record: ConditionRecord = {
    uuid: opening.uuid,
    ...place,
    tag: opening.tag,
    status: 'open',
    payload: opening.payload ?? null,
    finish_payload: null,
    start,
    finish: null,
    duration_seconds: null,
  };
  // A close kept meanwhile (handled at the same time as this opening) makes it read again.
  if (!(await putOpenConditionRecord(deps.db, record, open?.start, { noEarlyClose: !early }))) return openCondition(deps, place, opening, arrival);
  await logDeviceEvent(deps.db, {
    ...place,
    ts: arrival,
    type: 'condition',
    direction: 'd2c',
    payload: { uuid: record.uuid, status: 'open', tag: record.tag, payload: record.payload, start },
  });
  if (early && Date.parse(early.finish) >= Date.parse(start)) return (await closeCondition(deps, place, early, early.arrival)) ?? record;
  return record;
};

// An open pointer written before condition records (it held the payload) has no record: it is made from the pointer.
const recordOfPointer = (place: DevicePlace, pointer: ConditionPointer & { payload?: unknown }): ConditionRecord => ({
  uuid: pointer.uuid,
  ...place,
  tag: pointer.tag,
  status: 'open',
  payload: pointer.payload ?? null,
  finish_payload: null,
  start: pointer.start,
  finish: null,
  duration_seconds: null,
});

/**
 * Closes a device's condition: its record becomes closed, with finish, finish payload and
 * duration (never below 0: a device clock may step back), and the close is logged as a
 * `condition` entry of the device's event log. A close retried within 30 days answers the record
 * it closed and writes nothing. With `keepEarly` (the MQTT door, whose queue keeps no order), a
 * close that finds no open condition and is not such a retry is kept for the opening to come
 * (`openCondition`).
 * @returns the closed condition's record, or undefined when the device has no condition with this uuid.
 */
export const closeCondition = async (
  deps: ConditionDeps,
  place: DevicePlace,
  closing: ConditionClosing,
  arrival = new Date().toISOString(),
  { keepEarly = false } = {},
): Promise<ConditionRecord | undefined> => {
  const { open, closed } = await getConditionPointers(deps.db, place.device_id, closing.uuid);
  const finish = new Date(closing.finish).toISOString();
  if (!open) {
    const ended = closed && (await getConditionRecord(deps.db, place.workspace_id, place.device_id, closed));
    if (keepEarly && ended?.finish !== finish) {
      const kept = await putEarlyClose(deps.db, place.device_id, { uuid: closing.uuid, finish, finish_payload: closing.finish_payload ?? null, arrival });
      // Opened meanwhile (an opening handled at the same time): close that.
      if (!kept) return closeCondition(deps, place, closing, arrival, { keepEarly });
    }
    return ended;
  }
  const current = (await getConditionRecord(deps.db, place.workspace_id, place.device_id, open)) ?? recordOfPointer(place, open);
  const record: ConditionRecord = {
    ...current,
    status: 'closed',
    finish_payload: closing.finish_payload ?? null,
    finish,
    duration_seconds: Math.max(0, Date.parse(finish) - Date.parse(current.start)) / 1000,
  };
  await putClosedConditionRecord(deps.db, record);
  await logDeviceEvent(deps.db, {
    ...place,
    ts: arrival,
    type: 'condition',
    direction: 'd2c',
    // The tag is an addition to the close's entry: the console's timeline names what closed.
    payload: { uuid: record.uuid, status: 'closed', tag: record.tag, finish_payload: record.finish_payload, finish },
  });
  return record;
};

/**
 * A workspace's conditions, open and closed, newest first (by start), with ZDM's filters: tag,
 * device, status, minimum duration (an open one counts the time since it opened), start and end
 * (bounds of the read itself). Paged as every list: with `limit` or `cursor`, a page and `next`.
 * @throws NotFoundError when the workspace is not the caller's.
 * @throws ValidationError naming `query.cursor` when the cursor is not one of this list, or lies outside start and end.
 */
export const listConditions = async (
  db: Db,
  caller: Caller,
  workspaceId: string,
  query: ConditionsQuery,
  now = Date.now(),
): Promise<StreamedList<Condition>> => {
  await requireWorkspace(db, caller, workspaceId);
  const { limit, cursor, tag, device, status, min_duration_seconds, start, end } = query;
  // A device's list reads its partition: its cursors are of another list than the workspace's.
  const list = device === undefined ? `conditions/${workspaceId}` : `conditions/${workspaceId}/${device}`;
  const page = { limit, cursor };
  const { prefix } = conditionsCollection(workspaceId, device);
  const after = startOf(list, page, prefix);
  const { low, high } = conditionRange(prefix, { start, end });
  // DynamoDB refuses a start key outside the key condition: a cursor of the same list under other bounds is the client's mistake.
  if (after !== undefined && (after < low || after > high)) {
    throw new ValidationError('Invalid query: query.cursor.', {
      details: [{ field: 'query.cursor', message: 'Must be the `next` of a page of this list with the same start and end.' }],
    });
  }
  const filter = {
    tag,
    deviceId: device,
    status,
    start,
    end,
    ...(min_duration_seconds === undefined
      ? {}
      : { minDuration: { seconds: min_duration_seconds, openedBy: new Date(now - min_duration_seconds * 1000).toISOString() } }),
  };
  return paginate(list, mapKeyed(readConditions(db, workspaceId, filter, { after, pageSize: pageSizeOf(page) }), conditionOf), page);
};
