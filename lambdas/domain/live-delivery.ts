import type { Db } from '../shared/clients';
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
}

const DELIVERY_CONCURRENCY = 32;

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
  if (!enabled || !targets.length) return;
  let failures = 0;
  const queue = [...targets];
  const worker = async () => {
    for (let target = queue.shift(); target; target = queue.shift()) {
      try {
        const connected =
          target.connected ??
          ((await getDeviceOfWorkspace(db, target.workspace_id, target.device_id)) as DeviceConnectionFields | undefined)?.connected;
        if (connected) await publish(target.device_id, message);
      } catch {
        failures += 1;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(DELIVERY_CONCURRENCY, targets.length) }, worker));
  if (failures) logger.warn('live delivery failed for some devices; they get it with their next #status', { failures, key: message.key });
};

