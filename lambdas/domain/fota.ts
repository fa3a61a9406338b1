import type { Db } from '../shared/clients';
import { WRITE_CONCURRENCY } from '../shared/env';
import { ConflictError, NotFoundError } from '../shared/errors';
import type { Caller } from '../shared/http';
import { nowIso } from '../shared/ids';
import type { FotaResultBody } from '../schemas/device-api';
import type { Fota } from '../schemas/fota';
import { finishPendingFota, getFotaOfDevice, putFota, putFotaOnDevicePages, type FotaRecord } from '../stores/job-store';
import { requireDevice } from './devices';
import { deviceConnectionOf, eventTimestamp, type DevicePlace } from './events';
import { requireReadyFirmware } from './firmware';
import { requireFleets } from './fleets';
import { deviceIdsOf, snapshotTargets } from './jobs';
import { requireWorkspace } from './workspaces';

export interface Firmware {
  firmwareId: string;
  firmwareVersion: string;
}

/** A stored FOTA as the API shows it (and as its events carry it): no device, place, stamp or message. */
export const toFota = ({ scheduled_at, status, value }: FotaRecord): Fota => ({ scheduled_at, status, value });

const pendingFota = ({ firmwareId, firmwareVersion }: Firmware) => ({
  scheduled_at: nowIso(),
  status: 'pending',
  value: { firmware_id: firmwareId, firmware_version: firmwareVersion },
});

/** @throws NotFoundError when the device is not the caller's or has never had a FOTA scheduled. */
export const getFota = async (db: Db, caller: Caller, deviceId: string) => {
  await requireDevice(db, caller, deviceId);
  const fota = await getFotaOfDevice(db, deviceId);
  if (!fota) throw new NotFoundError(`No FOTA scheduled on device ${deviceId}.`);
  return toFota(fota);
};

const nameOf = ({ firmwareId, firmwareVersion }: Firmware) => ({ firmware_id: firmwareId, firmware_version: firmwareVersion });

/**
 * Schedules a firmware update on a device, replacing any earlier one. The request only writes the
 * FOTA (with the device's place and the `ts` of its event); the registry stream sends the `fota`
 * event (c2d, the FOTA status as payload) and publishes it to the device when it is connected.
 * @throws NotFoundError when the device is not the caller's; ConflictError when the version is registered (domain/firmware.ts) and not ready.
 */
export const scheduleFota = async (db: Db, caller: Caller, deviceId: string, firmware: Firmware) => {
  const device = await requireDevice(db, caller, deviceId);
  const artifact = await requireReadyFirmware(db, device.workspace_id, nameOf(firmware));
  const { place, connected } = await deviceConnectionOf(db, device);
  const fota: FotaRecord = { ...pendingFota(firmware), ...place, event_ts: eventTimestamp(), ...(connected ? { deliver_live: true } : {}), ...artifact };
  await putFota(db, fota);
  return toFota(fota);
};

/**
 * Schedules a firmware update on every device of the chosen fleets (all fleets when none is given)
 * at one snapshot, as `scheduleFleetJob` does a job: the devices are given as they are written; the
 * registry stream then sends one `fota` event (c2d) per device, all with one `ts`.
 * @throws NotFoundError when the workspace or a named fleet is not the caller's; ConflictError when
 * the version is registered (domain/firmware.ts) and not ready; nothing is written then.
 */
export const scheduleFleetFota = async (db: Db, caller: Caller, workspaceId: string, firmware: Firmware, fleetIds?: string[]) => {
  // What the snapshot checks first (an unknown fleet is a 404 before a firmware that is not ready is a 409), then the firmware.
  await requireWorkspace(db, caller, workspaceId);
  if (fleetIds?.length) await requireFleets(db, workspaceId, fleetIds);
  const artifact = await requireReadyFirmware(db, workspaceId, nameOf(firmware));
  const targets = await snapshotTargets(db, caller, workspaceId, fleetIds);
  const fota = pendingFota(firmware);
  const written = putFotaOnDevicePages(db, { ...fota, event_ts: eventTimestamp(), ...artifact }, targets, WRITE_CONCURRENCY);
  return { fota, devices: deviceIdsOf(written) };
};

/**
 * Ends a device's pending FOTA with the outcome the device reports (`done` or `failed`) and its
 * message; the registry stream sends its d2c `fota` event, naming the device's place now when it is
 * given. The same outcome reported again answers the FOTA as it is and changes nothing (so no
 * second event): a device may retry after a lost answer.
 * @throws NotFoundError when the device has no FOTA; ConflictError when it names another firmware
 * than the scheduled one, or the FOTA already ended otherwise.
 */
export const finishFota = async (
  db: Db,
  deviceId: string,
  outcome: Pick<FotaResultBody, 'status' | 'firmware_id' | 'firmware_version' | 'message'>,
  place?: DevicePlace,
) => {
  const firmware = { firmware_id: outcome.firmware_id, firmware_version: outcome.firmware_version };
  const stamp = { workspace_id: place?.workspace_id, fleet_id: place?.fleet_id, event_ts: eventTimestamp(), message: outcome.message };
  const ended = await finishPendingFota(db, deviceId, outcome.status, firmware, stamp);
  if (ended) return toFota(ended);
  const fota = await getFotaOfDevice(db, deviceId);
  if (!fota) throw new NotFoundError(`No FOTA scheduled on device ${deviceId}.`);
  const scheduled = fota.value;
  const { firmware_id = scheduled.firmware_id, firmware_version = scheduled.firmware_version } = firmware;
  if (firmware_id !== scheduled.firmware_id || firmware_version !== scheduled.firmware_version) {
    throw new ConflictError(`The scheduled FOTA is ${scheduled.firmware_id} ${scheduled.firmware_version}.`);
  }
  if (fota.status === outcome.status) return toFota(fota);
  throw new ConflictError(`The FOTA already ended: ${fota.status}.`);
};
