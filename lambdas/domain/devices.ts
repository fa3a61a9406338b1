import type { Db } from '../shared/clients';
import { NotFoundError } from '../shared/errors';
import type { Caller } from '../shared/http';
import { newId, nowIso } from '../shared/ids';
import type { CreateDeviceBody, Device, UpdateDeviceBody } from '../schemas/device';
import {
  createDevice as storeDevice,
  findDeviceLocator,
  getDeviceOfWorkspace,
  listDevicesOfWorkspace,
  updateDevice as storeDeviceUpdate,
  type DeviceRecord,
} from '../stores/device-store';
import { getFleetOfWorkspace, listFleetsOfWorkspace } from '../stores/fleet-store';
import { listIdentitiesOfDevice, listIdentitiesOfWorkspace, type IdentityRecord } from '../stores/identity-store';
import type { WorkspaceRecord } from '../stores/workspace-store';
import type { DeviceConnectionFields } from '../stores/device-mqtt-store';
import { identitiesField } from './identities';
import { requireWorkspace } from './workspaces';

const toDevice = (device: DeviceRecord, fleetName: string, workspace: WorkspaceRecord, identities: IdentityRecord[] = []): Device => ({
  id: device.id,
  name: device.name,
  account_id: device.account_id,
  fleet_id: device.fleet_id,
  fleet_name: fleetName,
  workspace_id: device.workspace_id,
  workspace_name: workspace.name,
  created_at: device.created_at,
  phys_id: device.phys_id,
  identities: identitiesField(identities),
  ...connectionFields(device),
});

/** The MQTT door's fields of a device (stores/device-mqtt-store.ts): absent until it first connects. */
const connectionFields = (device: DeviceRecord & DeviceConnectionFields) => ({
  connected: device.connected ?? false,
  last_connected_at: device.last_connected_at ?? null,
  last_disconnected_at: device.last_disconnected_at ?? null,
  manifest: device.manifest ?? null,
});

const withFleetName = async (db: Db, workspace: WorkspaceRecord, device: DeviceRecord) => {
  const [fleet, identities] = await Promise.all([
    getFleetOfWorkspace(db, workspace.id, device.fleet_id),
    listIdentitiesOfDevice(db, workspace.id, device.id),
  ]);
  return toDevice(device, fleet?.name ?? '', workspace, identities);
};

/**
 * The workspace's devices, oldest first; only those of `fleetIds` when given.
 * @throws NotFoundError when the workspace is not the caller's, or naming each given fleet that is not in it.
 */
export const listDevices = async (db: Db, caller: Caller, workspaceId: string, fleetIds?: string[]) => {
  const workspace = await requireWorkspace(db, caller, workspaceId);
  const [devices, fleets, identities] = await Promise.all([
    listDevicesOfWorkspace(db, workspaceId),
    listFleetsOfWorkspace(db, workspaceId),
    listIdentitiesOfWorkspace(db, workspaceId),
  ]);
  const fleetNames = new Map(fleets.map((f) => [f.id, f.name]));
  const missing = (fleetIds ?? []).filter((id) => !fleetNames.has(id));
  if (missing.length) {
    throw new NotFoundError(`Fleet ${missing[0]} not found.`, { details: missing.map((id) => ({ field: 'query.fleet', message: `Fleet ${id} not found.` })) });
  }
  const wanted = fleetIds?.length ? new Set(fleetIds) : undefined;
  const identitiesOf = new Map<string, IdentityRecord[]>();
  for (const identity of identities) identitiesOf.set(identity.device_id, [...(identitiesOf.get(identity.device_id) ?? []), identity]);
  return devices
    .filter((d) => !wanted || wanted.has(d.fleet_id))
    .sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id))
    .map((d) => toDevice(d, fleetNames.get(d.fleet_id) ?? '', workspace, identitiesOf.get(d.id)));
};

/** @throws NotFoundError when the workspace is not the caller's or the device is not in it. */
export const getDevice = async (db: Db, caller: Caller, workspaceId: string, deviceId: string) => {
  const workspace = await requireWorkspace(db, caller, workspaceId);
  const device = await getDeviceOfWorkspace(db, workspaceId, deviceId);
  if (!device) throw new NotFoundError(`Device ${deviceId} not found.`);
  return withFleetName(db, workspace, device);
};

/**
 * Creates a device in the given fleet, or in the workspace's default fleet.
 * @throws NotFoundError when the workspace is not the caller's or the fleet is not in it.
 */
export const createDevice = async (db: Db, caller: Caller, workspaceId: string, input: CreateDeviceBody) => {
  const workspace = await requireWorkspace(db, caller, workspaceId);
  const device: DeviceRecord = {
    id: newId('dev'),
    name: input.name,
    account_id: caller.accountId,
    workspace_id: workspaceId,
    fleet_id: input.fleet_id ?? workspace.default_fleet_id,
    phys_id: input.phys_id,
    created_at: nowIso(),
  };
  await storeDevice(db, device);
  return withFleetName(db, workspace, device);
};

/**
 * Renames a device and moves it to a fleet of the same workspace, all or nothing.
 * @throws NotFoundError when the workspace, device or fleet is not the caller's.
 */
export const updateDevice = async (db: Db, caller: Caller, workspaceId: string, deviceId: string, input: UpdateDeviceBody) => {
  const workspace = await requireWorkspace(db, caller, workspaceId);
  const device = await storeDeviceUpdate(db, workspaceId, deviceId, input);
  return withFleetName(db, workspace, device);
};

/**
 * Where a device of the caller's account lives, from its ID alone.
 * @throws NotFoundError when there is no such device in the caller's account.
 */
export const requireDevice = async (db: Db, caller: Caller, deviceId: string) => {
  const locator = await findDeviceLocator(db, deviceId);
  if (!locator || locator.account_id !== caller.accountId) throw new NotFoundError(`Device ${deviceId} not found.`);
  return { deviceId, ...locator };
};
