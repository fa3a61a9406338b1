import type { EventMessage } from '../schemas/forward';
import { MQTT_LIVE_DELIVERY } from '../shared/env';
import { logger } from '../shared/logger';
import type { DownMessage } from '../stores/device-channel';

/** A FOTA's `args` on `j/dn`: the firmware, with the `fw_version` name device agents read. */
export const fotaArgs = (value: { firmware_id: string; firmware_version: string }) => ({ ...value, fw_version: value.firmware_version });

/** A job's message on `j/dn`, as the contract has it. */
export const jobMessage = (name: string, value: unknown): DownMessage => ({ key: `@${name}`, value: { args: value } });

/** A FOTA's message on `j/dn`. */
export const fotaMessage = (value: { firmware_id: string; firmware_version: string }): DownMessage => ({ key: '@fota', value: { args: fotaArgs(value) } });

const DELIVERY_CONCURRENCY = 32;

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

/** An event the registry stream made of a job's or FOTA's change, and whether its item asks for live delivery. */
export interface ScheduledChange {
  event: EventMessage;
  /** The device was connected when the job or FOTA was scheduled (`deliver_live` on the item). */
  live: boolean;
}

/**
 * Publishes on `j/dn` the jobs and FOTA that the registry stream's events say were just scheduled
 * on a device that was connected then: live delivery follows the stored write, outside the
 * request, however many devices a fleet-wide scheduling wrote, with no lookup (the scheduling read
 * each device's connection state with it). Best effort: a device that misses it (disconnected
 * since, a failed publish) gets it in the answer to its next `#status`. Off unless
 * MQTT_LIVE_DELIVERY is set.
 */
export const deliverScheduled = async (
  publish: (deviceId: string, message: DownMessage) => Promise<void>,
  changes: ScheduledChange[],
  enabled = MQTT_LIVE_DELIVERY,
) => {
  if (!enabled) return;
  const deliveries = changes.flatMap(({ event, live }) => {
    const message = live ? downMessageOf(event) : undefined;
    return message ? [{ deviceId: event.device_id, message }] : [];
  });
  let failures = 0;
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < deliveries.length; i = next++) {
      await publish(deliveries[i].deviceId, deliveries[i].message).catch(() => {
        failures += 1;
      });
    }
  };
  await Promise.all(Array.from({ length: Math.min(DELIVERY_CONCURRENCY, deliveries.length) }, worker));
  if (failures) logger.warn('live delivery failed for some devices; they get it with their next #status', { failures });
};
