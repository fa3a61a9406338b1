import type { Db } from '../shared/clients';
import { ttlCache, type TtlCacheOptions } from '../shared/ttl-cache';
import { findDeviceLocator, getDeviceOfWorkspace } from '../stores/device-store';
import { getWorkspaceOfAccount } from '../stores/workspace-store';
import type { DevicePlace } from './events';

/** Where a device's points are stored and what they are forwarded with. */
export interface DevicePlacement extends DevicePlace {
  device_name: string;
  /** The account of the device's workspace (where the workspace's settings are read). */
  account_id: string;
}

/** How long a lookup's answers are used (the staleness bound of a move, a rename or a setting), and how many are kept (about 200 bytes each). */
export type DevicePlacesOptions = TtlCacheOptions;

/**
 * Looks up devices by ID (their locator: one eventually consistent read), remembering each answer for
 * `ttlMs`, unknown devices included. The MQTT door's data path uses it: a publish names only its
 * device, and two reads a publish would cost more than the publish itself. A device moved to
 * another fleet or renamed is therefore seen so within `ttlMs`: its points until then carry the
 * fleet and name it had. Lookups of one device at once share one read.
 */
export const devicePlaces = (db: Db, options: DevicePlacesOptions) => {
  // The locator carries the fleet and name: one read, eventually consistent (what is read is kept
  // for minutes anyway). A locator written before it did sends the read on to the device.
  const placementOf = ttlCache(async (deviceId: string): Promise<DevicePlacement | undefined> => {
    const locator = await findDeviceLocator(db, deviceId, { consistent: false });
    if (!locator) return undefined;
    if (locator.fleet_id !== undefined && locator.name !== undefined) {
      return { workspace_id: locator.workspace_id, fleet_id: locator.fleet_id, device_id: deviceId, device_name: locator.name, account_id: locator.account_id };
    }
    const device = await getDeviceOfWorkspace(db, locator.workspace_id, deviceId);
    return device && { workspace_id: device.workspace_id, fleet_id: device.fleet_id, device_id: device.id, device_name: device.name, account_id: device.account_id };
  }, options);

  /** The placements of the devices, undefined for one that does not exist. */
  const lookup = async (deviceIds: Iterable<string>): Promise<Map<string, DevicePlacement | undefined>> => {
    const ids = [...new Set(deviceIds)];
    const placements = await Promise.all(ids.map(placementOf));
    return new Map(ids.map((id, i) => [id, placements[i]]));
  };
  /** Keeps a placement read elsewhere (a claim of the device's points answers its locator) as if looked up now. */
  const remember = (deviceId: string, placement: DevicePlacement) => placementOf.remember(deviceId, placement);
  return Object.assign(lookup, { remember });
};

/**
 * What `devicePlaces` returns: a lookup of many devices at once, and a way to keep a placement read
 * elsewhere (absent in lookups that remember nothing).
 */
export type DevicePlacesLookup = ((deviceIds: Iterable<string>) => Promise<Map<string, DevicePlacement | undefined>>) & {
  remember?: (deviceId: string, placement: DevicePlacement) => void;
};

/**
 * Looks up workspaces' data retention (days; undefined: kept forever, or no such workspace), as
 * `devicePlaces` looks up devices: one eventually consistent read of the workspace per `ttlMs`
 * and container, whatever the number of points. A changed retention therefore reaches the expiry
 * of newly written points within `ttlMs` (reads apply it at once).
 */
export const workspaceRetentions = (db: Db, options: TtlCacheOptions) => {
  const retentionOf = ttlCache(async (key: string): Promise<number | undefined> => {
    const [accountId, workspaceId] = key.split('\n');
    const workspace = await getWorkspaceOfAccount(db, accountId, workspaceId, { consistent: false });
    return workspace?.data_retention_days ?? undefined;
  }, options);
  return (accountId: string, workspaceId: string) => retentionOf(`${accountId}\n${workspaceId}`);
};

/** What `workspaceRetentions` returns: one workspace's retention, by its account and ID. */
export type WorkspaceRetentionLookup = ReturnType<typeof workspaceRetentions>;
