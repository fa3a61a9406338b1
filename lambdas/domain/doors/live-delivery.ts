import type { EventMessage } from '../../schemas/forward';
import { MQTT_LIVE_DELIVERY } from '../../shared/env';
import { logger } from '../../shared/logger';
import type { DownMessage } from '../../stores/device-channel';
import type { FirmwareDownload, FirmwareName } from '../fleet-ops/firmware';
import { stateMessageOf } from '../state/state-events';

/**
 * A FOTA's `args` on `j/dn`: the firmware, with the `fw_version` name device agents read, and,
 * when the version's image is uploaded, its download (`url`, `sha256`, `size`, `expires_at`).
 */
export const fotaArgs = (value: FirmwareName, download?: FirmwareDownload) => ({ ...value, fw_version: value.firmware_version, ...download });

/** Finds the download of a FOTA's firmware as it is delivered (domain/firmware.ts `firmwareDownloads`). */
export type FotaDownloads = (workspaceId: string, firmware: FirmwareName) => Promise<FirmwareDownload | undefined>;

/** A job's message on `j/dn`, as the contract has it. */
export const jobMessage = (name: string, value: unknown): DownMessage => ({ key: `@${name}`, value: { args: value } });

/** A FOTA's message on `j/dn`. */
export const fotaMessage = (value: FirmwareName, download?: FirmwareDownload): DownMessage => ({ key: '@fota', value: { args: fotaArgs(value, download) } });

const DELIVERY_CONCURRENCY = 32;

/**
 * The `j/dn` message of a c2d `job` or `fota` event that makes it pending (just scheduled, or
 * released by its rollout), a FOTA with the download `downloads` finds for it (minted now), or of
 * a c2d `status` event of a desired state's change (`#state`); undefined for any other event
 * (queued, canceled, timed out, d2c).
 */
export const downMessageOf = async (event: EventMessage, downloads?: FotaDownloads): Promise<DownMessage | undefined> => {
  // A desired state's change: `#state` with the changed keys and the version (spec/fleet-state.md §3).
  if (event.type === 'status') return stateMessageOf(event);
  if (event.direction !== 'c2d' || (event.payload as { status?: string }).status !== 'pending') return undefined;
  if (event.type === 'job') {
    const job = event.payload as { name: string; value: unknown };
    return jobMessage(job.name, job.value);
  }
  if (event.type !== 'fota') return undefined;
  const { value } = event.payload as { value: FirmwareName };
  return fotaMessage(value, await downloads?.(event.workspace_id, value));
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
 * since, a failed publish, a download that could not be looked up) gets it in the answer to its
 * next `#status`. A FOTA of a registered firmware carries a download URL minted now by `downloads`;
 * one whose image in S3 is not the registered one gets none and is not sent (`#status` holds it
 * back too until S3 holds the registered bytes). Off unless MQTT_LIVE_DELIVERY is set.
 */
export const deliverScheduled = async (
  publish: (deviceId: string, message: DownMessage) => Promise<void>,
  changes: ScheduledChange[],
  enabled = MQTT_LIVE_DELIVERY,
  downloads?: FotaDownloads,
) => {
  if (!enabled) return;
  const deliveries = changes.filter(({ live }) => live).map(({ event }) => event);
  let failures = 0;
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < deliveries.length; i = next++) {
      const event = deliveries[i];
      await downMessageOf(event, downloads)
        .then((message) => message && publish(event.device_id, message))
        .catch(() => {
          failures += 1;
        });
    }
  };
  await Promise.all(Array.from({ length: Math.min(DELIVERY_CONCURRENCY, deliveries.length) }, worker));
  if (failures) logger.warn('live delivery failed for some devices; they get it with their next #status', { failures });
};
