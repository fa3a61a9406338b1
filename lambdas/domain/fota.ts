import type { Db } from '../shared/clients';
import { WRITE_CONCURRENCY } from '../shared/env';
import { NotFoundError } from '../shared/errors';
import type { Caller } from '../shared/http';
import { nowIso } from '../shared/ids';
import type { Fota } from '../schemas/fota';
import { getFotaOfDevice, putFota, putFotaOnDevices, type FotaRecord } from '../stores/job-store';
import { requireDevice } from './devices';
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
 * Schedules a firmware update on a device, replacing any earlier one.
 * @throws NotFoundError when the device is not the caller's.
 */
export const scheduleFota = async (db: Db, caller: Caller, deviceId: string, firmware: Firmware) => {
  await requireDevice(db, caller, deviceId);
  const fota: FotaRecord = { ...pendingFota(firmware), device_id: deviceId };
  await putFota(db, fota);
  return toFota(fota);
};

/**
 * Schedules a firmware update on every device of the chosen fleets (all fleets when none is given).
 * @throws NotFoundError when the workspace or a named fleet is not the caller's; nothing is written then.
 */
export const scheduleFleetFota = async (db: Db, caller: Caller, workspaceId: string, firmware: Firmware, fleetIds?: string[]) => {
  const devices = await targetDevices(db, caller, workspaceId, fleetIds);
  const fota = pendingFota(firmware);
  await putFotaOnDevices(db, fota, devices, WRITE_CONCURRENCY);
  return { ...fota, devices };
};
