import type { Db } from '../shared/clients';
import { WRITE_CONCURRENCY } from '../shared/env';
import { ConflictError, NotFoundError } from '../shared/errors';
import type { Caller } from '../shared/http';
import { nowIso } from '../shared/ids';
import type { FotaResultBody } from '../schemas/device-api';
import type { Fota } from '../schemas/fota';
import { finishPendingFota, getFotaOfDevice, putFota, putFotaOnDevices, type FotaRecord } from '../stores/job-store';
import { requireDevice } from './devices';
import { devicePlaceOf, eventMessages, publishForward } from './events';
import { targetDevices } from './jobs';

export interface Firmware {
  firmwareId: string;
  firmwareVersion: string;
}

const toFota = ({ scheduled_at, status, value }: FotaRecord): Fota => ({ scheduled_at, status, value });

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

/**
 * Schedules a firmware update on a device, replacing any earlier one, then sends a `fota` event
 * (c2d, the FOTA status as payload) to the forward queue.
 * @throws NotFoundError when the device is not the caller's.
 */
export const scheduleFota = async (db: Db, caller: Caller, deviceId: string, firmware: Firmware) => {
  const device = await requireDevice(db, caller, deviceId);
  const fota: FotaRecord = { ...pendingFota(firmware), device_id: deviceId };
  const [place] = await Promise.all([devicePlaceOf(db, device), putFota(db, fota)]);
  await publishForward(eventMessages([place], 'fota', 'c2d', toFota(fota)));
  return toFota(fota);
};

/**
 * Schedules a firmware update on every device of the chosen fleets (all fleets when none is given),
 * then sends one `fota` event (c2d) per device to the forward queue.
 * @throws NotFoundError when the workspace or a named fleet is not the caller's; nothing is written then.
 */
export const scheduleFleetFota = async (db: Db, caller: Caller, workspaceId: string, firmware: Firmware, fleetIds?: string[]) => {
  const devices = await targetDevices(db, caller, workspaceId, fleetIds);
  const fota = pendingFota(firmware);
  const ids = devices.map((d) => d.device_id);
  await putFotaOnDevices(db, fota, ids, WRITE_CONCURRENCY);
  await publishForward(eventMessages(devices, 'fota', 'c2d', fota));
  return { ...fota, devices: ids };
};

/**
 * Ends a device's pending FOTA with the outcome the device reports (`done` or `failed`). The same
 * outcome reported again answers the FOTA as it is: a device may retry after a lost answer.
 * @throws NotFoundError when the device has no FOTA; ConflictError when it names another firmware
 * than the scheduled one, or the FOTA already ended otherwise.
 */
export const finishFota = async (db: Db, deviceId: string, outcome: Pick<FotaResultBody, 'status' | 'firmware_id' | 'firmware_version'>) => {
  const firmware = { firmware_id: outcome.firmware_id, firmware_version: outcome.firmware_version };
  const ended = await finishPendingFota(db, deviceId, outcome.status, firmware);
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
