import type { Db } from '../../shared/clients';
import { NotFoundError } from '../../shared/errors';
import type { Caller } from '../../shared/http';
import { newId, nowIso } from '../../shared/ids';
import { noteWorkspace } from '../../shared/request-scope';
import type { CreateDeviceBody, Device, UpdateDeviceBody } from '../../schemas/device';
import {
  createDevice as storeDevice,
  findDeviceLocator,
  getDeviceOfWorkspace,
  readDevicesOfWorkspace,
  updateDevice as storeDeviceUpdate,
  type DeviceRecord,
} from '../../stores/device-store';
import { getFleetNames, getFleetOfWorkspace } from '../../stores/fleet-store';
import { listIdentitiesOfDevice, readIdentitiesOfWorkspace, type IdentityRecord } from '../../stores/identity-store';
import type { Keyed } from '../../stores/items';
import { collection } from '../../stores/keys';
import type { PageQuery } from '../../schemas/list';
import type { StreamedList } from '../../shared/json-stream';
import { requireFleets } from './fleets';
import { quota } from '../limits/limits';
import { pageSizeOf, paginate, startOf } from './lists';
import type { WorkspaceRecord } from '../../stores/workspace-store';
import type { DeviceConnectionFields } from '../../stores/device-mqtt-store';
import type { DeviceHealthFields } from '../../stores/device-health-store';
import { identitiesField } from './identities';
import { requireWorkspace } from '../tenancy/workspaces';

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
  ...healthFields(device),
});

/** What the data and FOTA paths keep of a device (stores/device-health-store.ts): null until known. */
const healthFields = (device: DeviceRecord & DeviceHealthFields) => ({
  last_seen_at: device.last_seen_at ?? null,
  firmware_version: device.firmware_version ?? null,
});

/** The MQTT door's fields of a device (stores/device-mqtt-store.ts): absent until it first connects. */
const connectionFields = (device: DeviceRecord & DeviceConnectionFields) => ({
  connected: device.connected ?? false,
  last_connected_at: device.last_connected_at ?? null,
  last_disconnected_at: device.last_disconnected_at ?? null,
  manifest: device.manifest ?? null,
});

const withFleetName = async (db: Db, workspace: WorkspaceRecord, device: DeviceRecord) => {
  const [fleet, identities] = await Promise.all([getFleetOfWorkspace(db, workspace.id, device.fleet_id), listIdentitiesOfDevice(db, workspace.id, device.id)]);
  return toDevice(device, fleet?.name ?? '', workspace, identities);
};

// Fleet names the device list keeps at most; past it the cache starts over (a workspace rarely has that many fleets).
const FLEET_NAMES_KEPT = 10_000;

/**
 * The identities of the devices a list walks, read alongside it: both collections are in device ID
 * order (`DEV#<dev>`, `IDN#<dev>#<idn>`), so one pass over each joins them with flat memory.
 */
const identityJoin = (identities: AsyncGenerator<Keyed<IdentityRecord>>) => {
  let head: IteratorResult<Keyed<IdentityRecord>> | undefined;
  return {
    /** The identities of this device; devices must be asked for in ID order. */
    of: async (deviceId: string) => {
      const found: IdentityRecord[] = [];
      for (;;) {
        head ??= await identities.next();
        if (head.done || head.value.value.device_id > deviceId) return found;
        // Identities of devices the list skips (another fleet, or gone) are passed over.
        if (head.value.value.device_id === deviceId) found.push(head.value.value);
        head = undefined;
      }
    },
    close: () => identities.return(undefined),
  };
};

/**
 * The workspace's devices, oldest first (ID order), streamed with their fleet names and
 * identities; only those of `fleet` when given; a page of them when the query asks.
 * @throws NotFoundError when the workspace is not the caller's, or naming each given fleet that is not in it.
 * @throws ValidationError when the cursor is not one of this list.
 */
export const listDevices = async (db: Db, caller: Caller, workspaceId: string, query: PageQuery & { fleet?: string[] } = {}): Promise<StreamedList<Device>> => {
  const workspace = await requireWorkspace(db, caller, workspaceId);
  const fleetIds = query.fleet?.length ? query.fleet : undefined;
  if (fleetIds) await requireFleets(db, workspaceId, fleetIds);
  const list = `devices/${workspaceId}`;
  const { prefix } = collection.devicesOfWorkspace(workspaceId);
  const after = startOf(list, query, prefix);
  async function* source(): AsyncGenerator<Keyed<Device>> {
    const names = new Map<string, string>();
    const identities = identityJoin(readIdentitiesOfWorkspace(db, workspaceId, after?.slice(prefix.length), pageSizeOf(query)));
    try {
      for await (const page of readDevicesOfWorkspace(db, workspaceId, { after, pageSize: pageSizeOf(query), fleetIds })) {
        const unknown = [...new Set(page.map(({ value }) => value.fleet_id))].filter((id) => !names.has(id));
        if (unknown.length) {
          if (names.size + unknown.length > FLEET_NAMES_KEPT) names.clear();
          const found = await getFleetNames(db, workspaceId, unknown);
          for (const id of unknown) names.set(id, found.get(id) ?? '');
        }
        for (const { sk, value } of page) yield { sk, value: toDevice(value, names.get(value.fleet_id) ?? '', workspace, await identities.of(value.id)) };
      }
    } finally {
      await identities.close();
    }
  }
  return paginate(list, source(), query);
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
  };
  await storeDevice(db, device, quota(db, workspace, 'devices'));
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
