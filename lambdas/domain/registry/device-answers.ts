import type { Db } from '../../shared/clients';
import type { Device } from '../../schemas/device';
import type { DeviceRecord } from '../../stores/device-store';
import type { DeviceConnectionFields } from '../../stores/device-mqtt-store';
import type { DeviceHealthFields } from '../../stores/device-health-store';
import { getFleetNames } from '../../stores/fleet-store';
import type { IdentityRecord } from '../../stores/identity-store';
import type { Keyed } from '../../stores/items';
import type { WorkspaceRecord } from '../../stores/workspace-store';
import { identitiesField } from './identities';

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

/** A device as the API answers it: the stored record, its fleet's and workspace's names, its identities. */
export const toDevice = (device: DeviceRecord, fleetName: string, workspace: WorkspaceRecord, identities: IdentityRecord[] = []): Device => ({
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
  tags: device.tags ?? {},
});

// Fleet names a device list keeps at most; past it the cache starts over (a workspace rarely has that many fleets).
const FLEET_NAMES_KEPT = 10_000;

/** The names of the fleets a list's devices are in, read as new fleets appear and kept for the list. */
export const fleetNameCache = (db: Db, workspaceId: string) => {
  const names = new Map<string, string>();
  return {
    /** Reads the names of the fleets of these devices not known yet. */
    learn: async (devices: ReadonlyArray<Pick<DeviceRecord, 'fleet_id'>>) => {
      const unknown = [...new Set(devices.map((d) => d.fleet_id))].filter((id) => !names.has(id));
      if (!unknown.length) return;
      if (names.size + unknown.length > FLEET_NAMES_KEPT) names.clear();
      const found = await getFleetNames(db, workspaceId, unknown);
      for (const id of unknown) names.set(id, found.get(id) ?? '');
    },
    of: (fleetId: string) => names.get(fleetId) ?? '',
  };
};

/**
 * The identities of the devices a list walks, read alongside it: both collections are in device ID
 * order (`DEV#<dev>`, `IDN#<dev>#<idn>`), so one pass over each joins them with flat memory.
 */
export const identityJoin = (identities: AsyncGenerator<Keyed<IdentityRecord>>) => {
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
