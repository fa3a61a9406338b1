import type { Db } from '../shared/clients';
import type { EventMessage } from '../schemas/forward';
import { MQTT_LIVE_DELIVERY } from '../shared/env';
import { logger } from '../shared/logger';
import type { DownMessage } from '../stores/device-channel';
import type { DeviceConnectionFields } from '../stores/device-mqtt-store';
import { getDeviceOfWorkspace } from '../stores/device-store';

/** A FOTA's `args` on `j/dn`: the firmware, with the `fw_version` name device agents read. */
export const fotaArgs = (value: { firmware_id: string; firmware_version: string }) => ({ ...value, fw_version: value.firmware_version });

/** A job's message on `j/dn`, as the contract has it. */
export const jobMessage = (name: string, value: unknown): DownMessage => ({ key: `@${name}`, value: { args: value } });

/** A FOTA's message on `j/dn`. */
export const fotaMessage = (value: { firmware_id: string; firmware_version: string }): DownMessage => ({ key: '@fota', value: { args: fotaArgs(value) } });

/** A device a job or FOTA was scheduled on; `connected` when its state was read with it. */
export interface DeliveryTarget {
  workspace_id: string;
  device_id: string;
  connected?: boolean;
  /**
   * When the job or FOTA was scheduled: it is published only when the device has been connected
   * since then, as the request would have found it. A device that connected later asked for its
   * pending jobs with its `#status` on connecting.
   */
  scheduled_at?: string;
}

const DELIVERY_CONCURRENCY = 32;

/** Publishes each message to its device when the device is connected; best effort, failures counted and logged. */
const deliverEach = async (
  db: Db,
  publish: (deviceId: string, message: DownMessage) => Promise<void>,
  deliveries: Array<{ target: DeliveryTarget; message: DownMessage }>,
) => {
  let failures = 0;
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < deliveries.length; i = next++) {
      const { target, message } = deliveries[i];
      try {
        const device =
          target.connected === undefined ? ((await getDeviceOfWorkspace(db, target.workspace_id, target.device_id)) as DeviceConnectionFields | undefined) : undefined;
        const connected = target.connected ?? device?.connected;
        const connectedSince = device?.last_connected_at;
        const alreadyThere = !target.scheduled_at || !connectedSince || connectedSince <= target.scheduled_at;
        if (connected && alreadyThere) await publish(target.device_id, message);
      } catch {
        failures += 1;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(DELIVERY_CONCURRENCY, deliveries.length) }, worker));
  if (failures) logger.warn('live delivery failed for some devices; they get it with their next #status', { failures, keys: [...new Set(deliveries.map((d) => d.message.key))] });
};

/**
 * Publishes a just-scheduled job or FOTA on `j/dn` to those of the devices that are connected, at
 * once; best effort: a device that misses it (not connected, a failed publish) still gets it in
 * the answer to its next `#status`. Off unless MQTT_LIVE_DELIVERY is set.
 */
export const deliverLive = async (
  db: Db,
  publish: (deviceId: string, message: DownMessage) => Promise<void>,
  targets: DeliveryTarget[],
  message: DownMessage,
  enabled = MQTT_LIVE_DELIVERY,
) => {
  if (enabled) await deliverEach(db, publish, targets.map((target) => ({ target, message })));
};

/** The `j/dn` message of a c2d `job` or `fota` event (a job or FOTA just scheduled); undefined for any other event. */
export const downMessageOf = (event: EventMessage): DownMessage | undefined => {
  if (event.direction !== 'c2d') return undefined;
  if (event.type === 'job') {
    const job = event.payload as { name: string; value: unknown };
    return jobMessage(job.name, job.value);
  }
  if (event.type === 'fota') return fotaMessage((event.payload as { value: { firmware_id: string; firmware_version: string } }).value);
  return undefined;
};

/**
 * Publishes the jobs and FOTA that the registry stream's events say were just scheduled to their
 * devices that were connected when they were scheduled and still are (one lookup per device):
 * live delivery follows the stored write, however many devices a fleet-wide scheduling wrote,
 * outside the request.
 * Best effort as `deliverLive`; off unless MQTT_LIVE_DELIVERY is set.
 */
export const deliverScheduled = async (
  db: Db,
  publish: (deviceId: string, message: DownMessage) => Promise<void>,
  events: EventMessage[],
  enabled = MQTT_LIVE_DELIVERY,
) => {
  if (!enabled) return;
  const deliveries = events.flatMap((event) => {
    const message = downMessageOf(event);
    const { scheduled_at } = event.payload as { scheduled_at?: string };
    return message ? [{ target: { workspace_id: event.workspace_id, device_id: event.device_id, scheduled_at }, message }] : [];
  });
  await deliverEach(db, publish, deliveries);
};
