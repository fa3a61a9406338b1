import { isDeepStrictEqual } from 'node:util';
import type { Db } from '../../shared/clients';
import { ConflictError, NotFoundError } from '../../shared/errors';
import { nowIso } from '../../shared/ids';
import type { DeviceState, PatchDeviceStateBody } from '../../schemas/state';
import type { Caller } from '../../shared/http';
import { setDeviceFirmware } from '../../stores/device-health-store';
import { getDeviceOfWorkspace } from '../../stores/device-store';
import { writeStateSide, type StoredDeviceState } from '../../stores/device-state-store';
import { deltaOf, desiredByAfter, mergeChanges, validateChanges } from './document';
import { requireWorkspace } from '../tenancy/workspaces';

/** Which device: its workspace and ID. */
export interface DeviceRef {
  workspaceId: string;
  deviceId: string;
}

/** A device item as read (any of its fields), of which only `state` matters here. */
export type DeviceItem = { state?: Partial<StoredDeviceState>; firmware_version?: string };

// A write that lost a race reads again; a device's own writes rarely race more than a few times.
const ATTEMPTS = 20;

/** The stored state of a device item, each part present (empty objects and version 0 for a device never given one). */
const storedOf = (item: DeviceItem): StoredDeviceState => ({
  desired: item.state?.desired ?? {},
  reported: item.state?.reported ?? {},
  version: item.state?.version ?? 0,
  desired_at: item.state?.desired_at ?? {},
  reported_at: item.state?.reported_at ?? {},
  ...(item.state?.desired_by ? { desired_by: item.state.desired_by } : {}),
});

/**
 * A device's state as answered (spec/fleet-state.md §3): desired, reported, the delta (desired keys
 * not deep-equal to the reported ones), the version and when each key was set.
 */
export const stateOf = (item: DeviceItem): DeviceState => {
  const { desired_by: _rollouts, ...stored } = storedOf(item);
  return { ...stored, delta: deltaOf(stored.desired, stored.reported) };
};

const readDevice = async (db: Db, { workspaceId, deviceId }: DeviceRef) => {
  const device = (await getDeviceOfWorkspace(db, workspaceId, deviceId)) as DeviceItem | undefined;
  if (!device) throw new NotFoundError(`Device ${deviceId} not found.`);
  return device;
};

/**
 * Merges desired keys into a device's state (null removes one) and answers the new state. A change
 * of `desired` grows the version by one; a merge that changes nothing writes nothing. With
 * `version`, the change is made only over that version. With `by` (a state rollout's release), each
 * key records that rollout behind its value, so that the registry stream knows which rollouts a
 * report applies, and which a later change supersedes ({@link desiredByAfter}). Written only over the state it was
 * computed from (a lost race reads again). The registry stream then tells a connected device
 * (`#state` on `j/dn`) and emits the c2d `status` event.
 * @throws ValidationError naming `body.desired.<key>` (or `body.desired`) when the change or its result breaks the document rules; nothing is written.
 * @throws ConflictError when `version` is given and is not the current one; nothing is written.
 * @throws NotFoundError when the workspace holds no such device.
 */
export const setDesired = async (
  db: Db,
  ref: DeviceRef,
  desired: Record<string, unknown | null>,
  { version, field = 'body.desired', by }: { version?: number; field?: string; by?: string } = {},
): Promise<DeviceState> => {
  const changes = validateChanges(desired, field);
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const item = await readDevice(db, ref);
    const read = storedOf(item);
    if (version !== undefined && version !== read.version) {
      throw new ConflictError(`The device's state is at version ${read.version}, not ${version}: read it again.`, {
        details: [{ field: 'body.version', message: `The current version is ${read.version}.` }],
      });
    }
    const { document, times } = mergeChanges(read.desired, read.desired_at, changes, nowIso(), field);
    const rollouts = desiredByAfter(read.desired, read.desired_by, changes, by);
    const changed = !isDeepStrictEqual(document, read.desired);
    // Nothing changed (every key set to the value it had, by the rollouts it had): no new version, no event.
    if (!changed && isDeepStrictEqual(rollouts, read.desired_by ?? {})) return stateOf({ state: read });
    const next = { ...read, desired: document, desired_at: times, version: changed ? read.version + 1 : read.version };
    const written = await writeStateSide(db, ref.workspaceId, ref.deviceId, item.state ? read : undefined, {
      side: 'desired',
      document,
      times,
      version: next.version,
      by: rollouts,
    });
    if (written) return stateOf({ state: next });
  }
  throw new ConflictError('The device’s state kept changing while it was written: try again.');
};

/**
 * Merges a device's report into its reported state (null removes a key) and answers the new state.
 * A report that changes nothing writes nothing. A reported `fw_version` (a string) becomes the
 * device's `firmware_version`, with its index entry. The registry stream then emits the d2c
 * `status` event (and moves state rollouts' devices along).
 * @throws ValidationError naming `<field>.<key>` (or `<field>`) when the report or its result breaks the document rules; nothing is written.
 * @throws NotFoundError when the workspace holds no such device.
 */
export const setReported = async (db: Db, ref: DeviceRef, reported: Record<string, unknown | null>, { field = 'body.reported' } = {}): Promise<DeviceState> => {
  const changes = validateChanges(reported, field);
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const item = await readDevice(db, ref);
    const read = storedOf(item);
    const { document, times } = mergeChanges(read.reported, read.reported_at, changes, nowIso(), field);
    if (isDeepStrictEqual(document, read.reported)) {
      return stateOf({ state: read });
    }
    const written = await writeStateSide(db, ref.workspaceId, ref.deviceId, item.state ? read : undefined, { side: 'reported', document, times });
    if (!written) continue;
    // A reported `fw_version` is the firmware the device runs (fleet-state.md §1), found by `firmware_version` searches too.
    const firmware = document.fw_version;
    if (typeof firmware === 'string' && firmware && firmware !== item.firmware_version) await setDeviceFirmware(db, ref.workspaceId, ref.deviceId, firmware);
    return stateOf({ state: { ...read, reported: document, reported_at: times } });
  }
  throw new ConflictError('The device’s state kept changing while it was written: try again.');
};

/** A device's state. @throws NotFoundError when the workspace holds no such device. */
export const getState = async (db: Db, ref: DeviceRef): Promise<DeviceState> => stateOf(await readDevice(db, ref));

/**
 * `GET /workspaces/{ws}/devices/{id}/state`: a device's state, for the caller's workspace.
 * @throws NotFoundError when the workspace is not the caller's or holds no such device.
 */
export const readDeviceState = async (db: Db, caller: Caller, workspaceId: string, deviceId: string) => {
  await requireWorkspace(db, caller, workspaceId);
  return getState(db, { workspaceId, deviceId });
};

/**
 * `PATCH /workspaces/{ws}/devices/{id}/state`: desired keys merged ({@link setDesired}), for the caller's workspace.
 * @throws NotFoundError when the workspace is not the caller's or holds no such device; what setDesired throws.
 */
export const patchDeviceState = async (db: Db, caller: Caller, workspaceId: string, deviceId: string, body: PatchDeviceStateBody) => {
  await requireWorkspace(db, caller, workspaceId);
  return setDesired(db, { workspaceId, deviceId }, body.desired, { version: body.version });
};
