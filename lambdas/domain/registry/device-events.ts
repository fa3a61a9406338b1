import type { Db } from '../../shared/clients';
import { NotFoundError } from '../../shared/errors';
import type { Caller } from '../../shared/http';
import { DEVICE_EVENTS_LIMIT_DEFAULT, type DeviceEvent, type DeviceEventsQuery } from '../../schemas/device-event';
import type { EventMessage, ForwardMessage } from '../../schemas/forward';
import { setDeviceFirmware } from '../../stores/device-health-store';
import { putDeviceEvents, readDeviceEvents, type DeviceEventRecord } from '../../stores/device-event-store';
import { getDeviceOfWorkspace } from '../../stores/device-store';
import { requireWorkspace } from '../tenancy/workspaces';

/** How long a device's event log keeps an event (DynamoDB's TTL removes it after). */
export const EVENT_LOG_DAYS = 30;
/** Largest payload (its JSON, in bytes) the log keeps whole; a larger one is kept as `{"truncated": true, "size": n}`. */
export const EVENT_LOG_PAYLOAD_MAX_BYTES = 8 * 1024;

/**
 * The event types a device's log keeps: its health (connections, jobs, FOTA, status, resets,
 * refusals), never the `data` event of each point nor the `timestamp` answers, and an
 * `authentication` only when refused (a granted one comes with every authorized request).
 */
const LOGGED: ReadonlySet<string> = new Set(['connection', 'disconnection', 'job', 'fota', 'status', 'reset', 'manifest', 'authorization', 'authentication']);

const logged = (message: ForwardMessage): message is EventMessage =>
  message.kind === 'event' &&
  LOGGED.has(message.type) &&
  (message.type !== 'authentication' || (message.payload as { result?: unknown } | null)?.result === 'denied');

const boundedPayload = (payload: unknown) => {
  const size = Buffer.byteLength(JSON.stringify(payload ?? null));
  return size > EVENT_LOG_PAYLOAD_MAX_BYTES ? { truncated: true, size } : (payload ?? null);
};

/** Writes one entry of a device's log (one UpdateItem): a condition opened or closed. */
export const logDeviceEvent = (db: Db, event: DeviceEventRecord) =>
  putDeviceEvents(db, [{ ...event, payload: boundedPayload(event.payload) }], EVENT_LOG_DAYS * 86_400);

/** The firmware a `fota` event says the device runs now: the version of a FOTA that ended `done`. */
const firmwareOf = (event: EventMessage) => {
  const payload = event.payload as { status?: string; value?: { firmware_version?: unknown }; late_outcome?: unknown } | null;
  const version = payload?.value?.firmware_version;
  return event.direction === 'd2c' && payload?.status === 'done' && payload.late_outcome === undefined && typeof version === 'string' ? version : undefined;
};

/**
 * Keeps what forwarded messages tell of their devices: each logged event in its device's log (one
 * write an event, at most 8 at once, never one a data point), and the firmware a FOTA that ended `done` installed
 * (the device's `firmware_version`). Idempotent: a retried batch rewrites the same items.
 */
export const recordDeviceEvents = async (db: Db, messages: ForwardMessage[]) => {
  const events = messages.filter(logged);
  const entries: DeviceEventRecord[] = events.map((event) => ({ ...event, payload: boundedPayload(event.payload) }));
  await putDeviceEvents(db, entries, EVENT_LOG_DAYS * 86_400);
  // A FOTA ends done once a device: these are few, one conditional write each.
  for (const event of events) {
    const firmware = firmwareOf(event);
    if (firmware !== undefined) await setDeviceFirmware(db, event.workspace_id, event.device_id, firmware);
  }
};

/**
 * A page of a device's event log, newest first, and the `before` of the next page (null when none).
 * @throws NotFoundError when the workspace is not the caller's or the device is not in it.
 */
export const listDeviceEvents = async (db: Db, caller: Caller, workspaceId: string, deviceId: string, query: DeviceEventsQuery) => {
  await requireWorkspace(db, caller, workspaceId);
  if (!(await getDeviceOfWorkspace(db, workspaceId, deviceId))) throw new NotFoundError(`Device ${deviceId} not found.`);
  const limit = query.limit ?? DEVICE_EVENTS_LIMIT_DEFAULT;
  const records = await readDeviceEvents(db, deviceId, { limit, before: query.before });
  const events: DeviceEvent[] = records.map((r) => ({ ...r, payload: r.payload ?? null }));
  return { events, next: events.length === limit ? events[events.length - 1].ts : null };
};
