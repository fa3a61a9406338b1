import type { Db } from '../../shared/clients';
import { NotFoundError } from '../../shared/errors';
import type { Caller } from '../../shared/http';
import { newId, nowIso } from '../../shared/ids';
import { noteWorkspace } from '../../shared/request-scope';
import type { CreateDeviceBody, Device, PatchDeviceBody, UpdateDeviceBody } from '../../schemas/device';
import {
  createDevice as storeDevice,
  findDeviceLocator,
  getDeviceOfWorkspace,
  updateDevice as storeDeviceUpdate,
  type DeviceRecord,
} from '../../stores/device-store';
import { getFleetOfWorkspace } from '../../stores/fleet-store';
import { listIdentitiesOfDevice } from '../../stores/identity-store';
import type { PageQuery } from '../../schemas/list';
import type { StreamedList } from '../../shared/json-stream';
import { requireFleets } from './fleets';
import { quota } from '../limits/limits';
import type { WorkspaceRecord } from '../../stores/workspace-store';
import { requireWorkspace } from '../tenancy/workspaces';
import { toDevice } from './device-answers';
import { parseQuery } from './query';
import { searchDevices } from './search';
import { mergeTags } from './tags';

/** A stored device as the API answers it: with its fleet's name and its identities. */
export const withFleetName = async (db: Db, workspace: WorkspaceRecord, device: DeviceRecord) => {
  const [fleet, identities] = await Promise.all([getFleetOfWorkspace(db, workspace.id, device.fleet_id), listIdentitiesOfDevice(db, workspace.id, device.id)]);
  return toDevice(device, fleet?.name ?? '', workspace, identities);
};

/**
 * The workspace's devices, oldest first (ID order), streamed with their fleet names and
 * identities; only those of `fleet` when given, and those matching `q` (the query language,
 * docs/api.md) when given; a page of them when the query asks.
 * @throws NotFoundError when the workspace is not the caller's, or naming each given fleet that is not in it.
 * @throws ValidationError when the cursor is not one of this list, or naming `query.q` where the query is malformed.
 */
export const listDevices = async (
  db: Db,
  caller: Caller,
  workspaceId: string,
  query: PageQuery & { fleet?: string[]; q?: string } = {},
): Promise<StreamedList<Device>> => {
  const search = query.q === undefined ? undefined : parseQuery(query.q);
  const workspace = await requireWorkspace(db, caller, workspaceId);
  const fleetIds = query.fleet?.length ? query.fleet : undefined;
  if (fleetIds) await requireFleets(db, workspaceId, fleetIds);
  return searchDevices(db, workspace, { query: search, fleetIds }, query);
};

/** @throws NotFoundError when the workspace is not the caller's or the device is not in it. */
export const getDevice = async (db: Db, caller: Caller, workspaceId: string, deviceId: string) => {
  const workspace = await requireWorkspace(db, caller, workspaceId);
  const device = await getDeviceOfWorkspace(db, workspaceId, deviceId);
  if (!device) throw new NotFoundError(`Device ${deviceId} not found.`);
  return withFleetName(db, workspace, device);
};

/**
 * Creates a device in the given fleet, or in the workspace's default fleet, within the workspace's
 * quota of devices.
 * @throws NotFoundError when the workspace is not the caller's or the fleet is not in it.
 * @throws QuotaExceededError when the workspace holds its limit of devices.
 */
export const createDevice = async (db: Db, caller: Caller, workspaceId: string, input: CreateDeviceBody) => {
  const workspace = await requireWorkspace(db, caller, workspaceId);
  const created_at = nowIso();
  const device: DeviceRecord = {
    id: newId('dev', created_at),
    name: input.name,
    account_id: caller.accountId,
    workspace_id: workspaceId,
    fleet_id: input.fleet_id ?? workspace.default_fleet_id,
    phys_id: input.phys_id,
    created_at,
    ...(input.tags && Object.keys(input.tags).length ? { tags: input.tags } : {}),
  };
  await storeDevice(db, device, quota(db, workspace, 'devices'));
  return withFleetName(db, workspace, device);
};

/**
 * Renames a device and moves it to a fleet of the same workspace (and replaces its tags when
 * given), all or nothing.
 * @throws NotFoundError when the workspace, device or fleet is not the caller's.
 */
export const updateDevice = async (db: Db, caller: Caller, workspaceId: string, deviceId: string, input: UpdateDeviceBody) => {
  const workspace = await requireWorkspace(db, caller, workspaceId);
  const device = await storeDeviceUpdate(db, workspaceId, deviceId, input);
  return withFleetName(db, workspace, device);
};

/**
 * Changes what the request names of a device: its name, its fleet (a move, as PUT's: its fleet
 * history and locator follow), its tags merged (a null removes one), all or nothing, over the
 * version of the device it read.
 * @throws NotFoundError when the workspace, device or fleet is not the caller's.
 * @throws ValidationError naming `body.tags` when the merge leaves more than 50 tags.
 */
export const patchDevice = async (db: Db, caller: Caller, workspaceId: string, deviceId: string, input: PatchDeviceBody) => {
  const workspace = await requireWorkspace(db, caller, workspaceId);
  const device = await storeDeviceUpdate(db, workspaceId, deviceId, (current) => ({
    name: input.name ?? current.name,
    fleet_id: input.fleet_id ?? current.fleet_id,
    ...(input.tags ? { tags: mergeTags(current.tags, input.tags) } : {}),
  }));
  return withFleetName(db, workspace, device);
};

/**
 * Where a device of the caller's account lives, from its ID alone; an API request found on it
 * counts in its workspace's usage.
 * @throws NotFoundError when there is no such device in the caller's account.
 */
export const requireDevice = async (db: Db, caller: Caller, deviceId: string) => {
  const locator = await findDeviceLocator(db, deviceId);
  if (!locator || locator.account_id !== caller.accountId) throw new NotFoundError(`Device ${deviceId} not found.`);
  noteWorkspace(locator.workspace_id);
  return { deviceId, ...locator };
};
