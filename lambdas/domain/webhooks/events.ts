import type { Db } from '../../shared/clients';
import { FORWARD_QUEUE_URL, WRITE_CONCURRENCY } from '../../shared/env';
import type { DataMessage, EventMessage, EventType, ForwardMessage } from '../../schemas/forward';
import { getDeviceOfWorkspace, type DeviceRecord } from '../../stores/device-store';
import { sendEncodedMessages } from '../../stores/queue-store';
import type { DataPoint } from '../../stores/timeseries';
import { packForward } from './forward-pack';
import { logger } from '../../shared/logger';
import { recordDeviceEvents } from '../registry/device-events';

/** Where a device lives, as every forwarded message names it. */
export interface DevicePlace {
  workspace_id: string;
  fleet_id: string;
  device_id: string;
}

export type Direction = EventMessage['direction'];

/** Where a device found by its ID lives, fleet included (a device moved meanwhile reports its new fleet). */
export const devicePlaceOf = async (db: Db, device: { deviceId: string; workspace_id: string }): Promise<DevicePlace> =>
  (await deviceConnectionOf(db, device)).place;

/** Where a device found by its ID lives, and whether it is connected over MQTT now (one read). */
export const deviceConnectionOf = async (db: Db, device: { deviceId: string; workspace_id: string }) => {
  const record = (await getDeviceOfWorkspace(db, device.workspace_id, device.deviceId)) as (DeviceRecord & { connected?: boolean }) | undefined;
  const place: DevicePlace = { workspace_id: device.workspace_id, fleet_id: record?.fleet_id ?? '', device_id: device.deviceId };
  return { place, connected: record?.connected === true };
};

let lastMicros = 0;

/**
 * Now, in RFC 3339 UTC with microseconds (`2021-07-08T14:21:15.915123Z`): the `ts` of events.
 * Strictly increasing within a process, so that events serialized by `ts` keep their order.
 */
export const eventTimestamp = (): string => {
  const micros = Math.max(Math.floor((performance.timeOrigin + performance.now()) * 1000), lastMicros + 1);
  lastMicros = micros;
  const iso = new Date(Math.floor(micros / 1000)).toISOString(); // …T14:21:15.915Z
  return `${iso.slice(0, -1)}${String(micros % 1000).padStart(3, '0')}Z`;
};

/** The forward message of a stored data point. */
export const dataMessage = (point: DataPoint, deviceName: string): DataMessage => ({
  kind: 'data',
  workspace_id: point.workspace_id,
  fleet_id: point.fleet_id,
  device_id: point.device_id,
  device_name: deviceName,
  timestamp_device: point.timestamp_device,
  timestamp_in: point.timestamp_in,
  tag: point.tag,
  payload: point.payload,
});

/** An event of one device. */
export const eventMessage = (device: DevicePlace, type: EventType, direction: Direction, payload: unknown, ts: string = eventTimestamp()): EventMessage => ({
  kind: 'event',
  ts,
  workspace_id: device.workspace_id,
  fleet_id: device.fleet_id,
  device_id: device.device_id,
  type,
  direction,
  payload,
});

/**
 * The `data` event that logs a data point in the device's activity: its tag and payload size in
 * bytes. Its `ts` is the point's arrival, so an ingest retry builds the same event.
 */
export const dataEvent = (point: DataPoint): EventMessage =>
  eventMessage(point, 'data', 'd2c', { tag: point.tag, size: Buffer.byteLength(JSON.stringify(point.payload) ?? '') }, point.timestamp_in);

/**
 * Puts messages on the forward queue, packed (`packForward`: hundreds of points or events in one
 * SQS message, rendered as the webhook entries they become), several SendMessageBatch calls in
 * flight. When no forward queue is configured (FORWARD_QUEUE_URL empty: a deployment or test
 * without forwarding) nothing is sent and nothing fails: forwarding is off. The stack and the
 * local runtime always set it.
 * @throws when SQS keeps refusing a message, so that the caller's request fails and is retried.
 */
export const publishForward = async (messages: ForwardMessage[]) => {
  if (!FORWARD_QUEUE_URL || !messages.length) return;
  await sendEncodedMessages(FORWARD_QUEUE_URL, packForward(messages), WRITE_CONCURRENCY);
};

/**
 * `publishForward` that also keeps what the messages tell of their devices (domain/registry/
 * device-events.ts: the devices' event logs, one write an event and none a data point, and the
 * firmware a FOTA installed): what every producer of events is given as its forward.
 */
export const forwardAndLog =
  (db: Db) =>
  async (messages: ForwardMessage[]): Promise<void> => {
    // The log is best effort and never in the forward's way: a failed write is logged, the
    // messages are forwarded all the same (the webhook is the record; the log a convenience).
    const logging = recordDeviceEvents(db, messages).catch((error: unknown) =>
      logger.warn('could not write device events to their logs', { error: error as Error }),
    );
    await publishForward(messages);
    await logging;
  };
