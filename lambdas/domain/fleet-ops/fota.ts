import type { Db } from '../../shared/clients';
import { WRITE_CONCURRENCY } from '../../shared/env';
import { ConflictError, NotFoundError } from '../../shared/errors';
import type { Caller } from '../../shared/http';
import { nowIso } from '../../shared/ids';
import type { FotaResultBody } from '../../schemas/device-api';
import type { EventMessage } from '../../schemas/forward';
import type { Fota } from '../../schemas/fota';
import { ENDED_STATUSES, OPEN_STATUSES } from '../../schemas/job';
import type { RolloutSettingsInput } from '../../schemas/rollout-settings';
import { getFotaOfDevice, putFota, putFotaOnDevicePages, transitionFota, type DeviceTarget, type FotaRecord } from '../../stores/job-store';
import { firmwareUseRef } from '../../stores/keys';
import { requireDevice } from '../registry/devices';
import { deviceConnectionOf, eventMessage, eventTimestamp, type DevicePlace } from '../webhooks/events';
import { scheduledState } from './executions';
import { requireReadyFirmware } from './firmware';
import { requireFleets } from '../registry/fleets';
import { countTargets, resolveTarget, type TargetQuery } from './fleet-targets';
import { scheduleOnFleets, type DeviceState } from './rollouts';
import { requireWorkspace } from '../tenancy/workspaces';

export interface Firmware {
  firmwareId: string;
  firmwareVersion: string;
}

/** A stored FOTA as the API shows it (and as its events carry it): no device, place, stamp or times but its end. */
export const toFota = ({ scheduled_at, status, value, message, completed_at, rollout_id, timeout_seconds }: FotaRecord): Fota => ({
  scheduled_at,
  status,
  value,
  ...(message ? { message } : {}),
  ...(ENDED_STATUSES.has(status) && completed_at ? { completed_at } : {}),
  ...(rollout_id ? { rollout_id } : {}),
  ...(timeout_seconds ? { timeout_seconds } : {}),
});

/** The FOTA's `value`: which firmware, as v3 shows it. */
const fotaValue = ({ firmwareId, firmwareVersion }: Firmware) => ({ firmware_id: firmwareId, firmware_version: firmwareVersion });

/**
 * The FOTA item of a device in the state its scheduling gives it, with what `requireReadyFirmware`
 * found of the version (its `firmware_ref` when it is registered).
 */
export const fotaRecordOf = (firmware: Firmware, device: DeviceTarget, state: DeviceState, { firmware_ref }: { firmware_ref?: string }): FotaRecord => ({
  value: fotaValue(firmware),
  ...state,
  ...device,
  ...(firmware_ref ? { firmware_ref: firmwareUseRef(firmware_ref, device.device_id) } : {}),
});

/** @throws NotFoundError when the device is not the caller's or has never had a FOTA scheduled. */
export const getFota = async (db: Db, caller: Caller, deviceId: string) => {
  await requireDevice(db, caller, deviceId);
  const fota = await getFotaOfDevice(db, deviceId);
  if (!fota) throw new NotFoundError(`No FOTA scheduled on device ${deviceId}.`);
  return toFota(fota);
};

/**
 * Schedules a firmware update on a device, replacing any earlier one. The request only writes the
 * FOTA (with the device's place and the `ts` of its event); the registry stream sends the `fota`
 * event (c2d, the FOTA status as payload) and publishes it to the device when it is connected.
 * With `timeoutSeconds`, the sweep ends it as `timed_out` if it has not ended that long after now.
 * @throws NotFoundError when the device is not the caller's; ConflictError when the version is registered (domain/firmware.ts) and not ready.
 */
export const scheduleFota = async (db: Db, caller: Caller, deviceId: string, firmware: Firmware, timeoutSeconds?: number) => {
  const device = await requireDevice(db, caller, deviceId);
  const artifact = await requireReadyFirmware(db, device.workspace_id, fotaValue(firmware));
  const { place, connected } = await deviceConnectionOf(db, device);
  const at = nowIso();
  const target: DeviceTarget = { ...place, ...(connected ? { deliver_live: true } : {}) };
  const state: DeviceState = { ...scheduledState({ at, released: true, timeout_seconds: timeoutSeconds }), scheduled_at: at, event_ts: eventTimestamp() };
  const fota = fotaRecordOf(firmware, target, state, artifact);
  await putFota(db, fota);
  return toFota(fota);
};

/**
 * Schedules a firmware update on every device of the chosen fleets (all fleets when none is given)
 * at one snapshot, as a rollout, as `scheduleFleetJob` does a job: the devices are given as they are
 * written; the registry stream then sends one `fota` event (c2d) per device, all with one `ts`.
 * @throws NotFoundError when the workspace or a named fleet is not the caller's; ConflictError when
 * the version is registered (domain/firmware.ts) and not ready; nothing is written then.
 */
export const scheduleFleetFota = async (
  db: Db,
  caller: Caller,
  workspaceId: string,
  firmware: Firmware,
  fleetIds?: string[],
  settings: RolloutSettingsInput = {},
  target: TargetQuery = {},
) => {
  // What the snapshot checks first (an unknown fleet is a 404 before a firmware that is not ready is a 409), then the firmware.
  await requireWorkspace(db, caller, workspaceId);
  if (fleetIds?.length) await requireFleets(db, workspaceId, fleetIds);
  // The target before the firmware, as the dry run checks them (scheduleOnFleets resolves it again, for its snapshot).
  await resolveTarget(db, workspaceId, target);
  const artifact = await requireReadyFirmware(db, workspaceId, fotaValue(firmware));
  const { rollout, devices } = await scheduleOnFleets(
    db,
    caller,
    workspaceId,
    fleetIds,
    settings,
    {
      kind: 'fota',
      subject: fotaValue(firmware),
      write: (pages, stateOf, count) =>
        putFotaOnDevicePages(db, (device, index) => fotaRecordOf(firmware, device, stateOf(device, index), artifact), pages, WRITE_CONCURRENCY, count),
    },
    target,
  );
  const fota: Fota = {
    scheduled_at: rollout.scheduled_at,
    status: 'pending',
    value: fotaValue(firmware),
    rollout_id: rollout.id,
    ...(settings.timeout_seconds ? { timeout_seconds: settings.timeout_seconds } : {}),
  };
  return { fota, devices };
};

/**
 * A fleet-wide FOTA's dry run: the checks `scheduleFleetFota` makes, in its order, then how many
 * devices it would target now; nothing is written.
 * @throws NotFoundError, ConflictError as `scheduleFleetFota` does.
 */
export const dryRunFleetFota = async (db: Db, caller: Caller, workspaceId: string, firmware: Firmware, fleetIds?: string[], target: TargetQuery = {}) => {
  await requireWorkspace(db, caller, workspaceId);
  if (fleetIds?.length) await requireFleets(db, workspaceId, fleetIds);
  const { query } = await resolveTarget(db, workspaceId, target);
  await requireReadyFirmware(db, workspaceId, fotaValue(firmware));
  return countTargets(db, workspaceId, fleetIds, query);
};

type FotaReport = Pick<FotaResultBody, 'status' | 'firmware_id' | 'firmware_version' | 'message'>;

const firmwareOf = (report: FotaReport) => ({ firmware_id: report.firmware_id, firmware_version: report.firmware_version });

/** Whether a report names the scheduled firmware (or none). */
const namesScheduled = (fota: FotaRecord, report: FotaReport) => {
  const { firmware_id = fota.value.firmware_id, firmware_version = fota.value.firmware_version } = firmwareOf(report);
  return firmware_id === fota.value.firmware_id && firmware_version === fota.value.firmware_version;
};

/**
 * Records what a device reports of its FOTA: progress (`in_progress`, again with each new
 * message), then its outcome (`done` or `failed`), with its message. The registry stream sends its
 * d2c `fota` event, naming the device's place now when it is given. A report that changes nothing
 * (the same outcome, or progress without a new message) answers the FOTA as it is and writes nothing
 * (so no second event): a device may retry after a lost answer.
 * @throws NotFoundError when the device has no FOTA; ConflictError when it names another firmware
 * than the scheduled one, the FOTA already ended otherwise, or is still queued in its rollout.
 */
export const finishFota = async (db: Db, deviceId: string, report: FotaReport, place?: DevicePlace) => {
  const unchanged = (fota: FotaRecord) =>
    fota.status === report.status && (report.status !== 'in_progress' || report.message === undefined || report.message === fota.message);
  if (report.status === 'in_progress') {
    const current = await getFotaOfDevice(db, deviceId);
    if (current && namesScheduled(current, report) && unchanged(current)) return toFota(current);
  }
  const expect = Object.fromEntries(Object.entries(firmwareOf(report)).flatMap(([field, v]) => (v === undefined ? [] : [[`value.${field}`, v]])));
  const ended = await transitionFota(db, deviceId, {
    from: ['pending', 'in_progress'],
    to: report.status,
    at: nowIso(),
    expect,
    set: { workspace_id: place?.workspace_id, fleet_id: place?.fleet_id, event_ts: eventTimestamp(), message: report.message || undefined },
  });
  if (ended) return toFota(ended);
  const fota = await getFotaOfDevice(db, deviceId);
  if (!fota) throw new NotFoundError(`No FOTA scheduled on device ${deviceId}.`);
  if (!namesScheduled(fota, report)) throw new ConflictError(`The scheduled FOTA is ${fota.value.firmware_id} ${fota.value.firmware_version}.`);
  if (unchanged(fota)) return toFota(fota);
  if (fota.status === 'queued') throw new ConflictError('The FOTA is queued in its rollout: it has not been released to the device yet.');
  throw new ConflictError(`The FOTA already ended: ${fota.status}.`);
};

/**
 * The d2c `fota` event of an outcome that came for a FOTA that can no longer take it: the MQTT door
 * records it so, leaving the FOTA as it is (`late_outcome` is what the device said). Undefined
 * when the device has no FOTA.
 */
export const lateFotaOutcomeEvent = async (db: Db, deviceId: string, report: FotaReport, place: DevicePlace): Promise<EventMessage | undefined> => {
  const fota = await getFotaOfDevice(db, deviceId);
  return fota && eventMessage(place, 'fota', 'd2c', { ...toFota(fota), late_outcome: report });
};

/**
 * Cancels a device's FOTA that has not ended (queued, pending, in progress): it leaves the device's
 * `#status`, its rollout counts it `canceled`, and the registry stream sends a c2d `fota` event.
 * @throws NotFoundError when the device is not the caller's or has no FOTA; ConflictError when it already ended.
 */
export const cancelFota = async (db: Db, caller: Caller, deviceId: string) => {
  await requireDevice(db, caller, deviceId);
  const canceled = await transitionFota(db, deviceId, { from: OPEN_STATUSES, to: 'canceled', at: nowIso(), set: { event_ts: eventTimestamp() } });
  if (canceled) return toFota(canceled);
  const fota = await getFotaOfDevice(db, deviceId);
  if (!fota) throw new NotFoundError(`No FOTA scheduled on device ${deviceId}.`);
  throw new ConflictError(`The FOTA already ended: ${fota.status}.`);
};
