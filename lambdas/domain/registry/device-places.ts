import type { Db } from '../../shared/clients';
import { LRUCache } from 'lru-cache';
import { ttlCache, type TtlCacheOptions } from '../../shared/ttl-cache';
import { findDeviceLocator, getDeviceOfWorkspace, type DeviceLocator } from '../../stores/device-store';
import { ALARM_RULES_VERSION } from '../../stores/alarm-rule-store';
import { getWorkspaceOfAccount } from '../../stores/workspace-store';
import type { DevicePlace } from '../webhooks/events';

/** Where a device's points are stored and what they are forwarded with. */
export interface DevicePlacement extends DevicePlace {
  device_name: string;
  /** The account of the device's workspace (where the workspace's settings are read). */
  account_id: string;
}

/** A device's placement as its locator tells it, when the locator carries it all (locators written before fleet and name were on them do not). */
export const placementOfLocator = (deviceId: string, locator: DeviceLocator | undefined): DevicePlacement | undefined =>
  locator?.fleet_id !== undefined && locator.name !== undefined
    ? { workspace_id: locator.workspace_id, fleet_id: locator.fleet_id, device_id: deviceId, device_name: locator.name, account_id: locator.account_id }
    : undefined;

/** What the ingest reads of a workspace: its data retention, the version of its devices' places, and of its alarm rules. */
export interface WorkspaceSettings {
  /** Days points are kept; undefined: forever. */
  data_retention_days?: number;
  /** Counts the moves and renames of its devices: a place read at another version may be stale. */
  places_version: number;
  /** Counts the changes of its alarm rules (0: it never had one, and its points are evaluated against none: domain/alarms/threshold-ingest.ts). */
  alarm_rules_version?: number;
}

/**
 * Looks up workspaces' settings (undefined: no such workspace): one eventually consistent read of
 * the workspace per `ttlMs` and container, whatever the number of points. A changed retention
 * therefore reaches the expiry of newly written points within `ttlMs` (reads apply it at once), and
 * a device moved or renamed reaches the MQTT data path within `ttlMs` ({@link devicePlaces}).
 */
export const workspaceSettings = (db: Db, options: TtlCacheOptions) => {
  const settingsOf = ttlCache(async (key: string): Promise<WorkspaceSettings | undefined> => {
    const [accountId, workspaceId] = key.split('\n');
    const workspace = await getWorkspaceOfAccount(db, accountId, workspaceId, { consistent: false });
    return (
      workspace && {
        ...(typeof workspace.data_retention_days === 'number' ? { data_retention_days: workspace.data_retention_days } : {}),
        places_version: workspace.places_version ?? 0,
        alarm_rules_version: Number((workspace as unknown as Record<string, unknown>)[ALARM_RULES_VERSION] ?? 0),
      }
    );
  }, options);
  return (accountId: string, workspaceId: string) => settingsOf(`${accountId}\n${workspaceId}`);
};

/** What `workspaceSettings` returns: one workspace's settings, by its account and ID. */
export type WorkspaceSettingsLookup = ReturnType<typeof workspaceSettings>;

/** How `devicePlaces` keeps what it read. */
export interface DevicePlacesOptions {
  /** The workspaces' settings, whose `places_version` says whether a remembered place is current (their `ttlMs` is the staleness bound of a move or a rename). */
  settings: WorkspaceSettingsLookup;
  /** How long an unknown device is remembered as unknown, in milliseconds (a device created since is found after it). */
  ttlMs: number;
  /** Places remembered at most (about 200 bytes each); the longest unused forgotten first. */
  max: number;
  now?: () => number;
}

/**
 * How long a place is kept at most, however current its workspace says it is: a day, as a
 * container's first claim of a device's points each UTC day answers its place afresh anyway.
 */
export const PLACE_MAX_AGE_MS = 24 * 3600 * 1000;

interface Remembered {
  placement?: DevicePlacement;
  /** The workspace's places_version read before the place was ({@link UNVERIFIED}: not known to be). */
  version: number;
  readAt: number;
}

/** The version of a place whose read was not ordered after its workspace's version: checked again at its next lookup. */
const UNVERIFIED = -1;

/**
 * Looks up devices by ID (their locator), remembering each answer. The MQTT door's data path uses
 * it: a publish names only its device, and two reads a publish would cost more than the publish
 * itself. A place is used while its workspace's `places_version` (read through `settings`, every
 * `ttlMs` at most) is the one read before it, and for a day at most: a device moved to another
 * fleet or renamed is therefore seen so within the settings' `ttlMs`, and a container reads a
 * device again only after such a change (or a day), not every `ttlMs`. An unknown device is
 * remembered for `ttlMs`. Lookups of one device at once share one read.
 */
export const devicePlaces = (db: Db, { settings, ttlMs, max, now: clock }: DevicePlacesOptions) => {
  const now = clock ?? Date.now;
  const versionOf = async (placement: DevicePlacement) => (await settings(placement.account_id, placement.workspace_id))?.places_version ?? 0;
  // The locator carries the fleet and name; a locator written before it did sends the read on to the device.
  const locate = async (deviceId: string): Promise<DevicePlacement | undefined> => {
    const locator = await findDeviceLocator(db, deviceId, { consistent: true });
    const placement = placementOfLocator(deviceId, locator);
    if (placement) return placement;
    const device = locator && (await getDeviceOfWorkspace(db, locator.workspace_id, deviceId));
    return (
      device && { workspace_id: device.workspace_id, fleet_id: device.fleet_id, device_id: device.id, device_name: device.name, account_id: device.account_id }
    );
  };
  // The workspace's version first, then the place, strongly consistent: a move or rename committed
  // before the version was read is in the place, one after it has a higher version. (Read the
  // other way round, or eventually consistent, a place could be older than its version and kept.)
  // A device never leaves its workspace: a place read before tells where to read the version.
  const read = async (deviceId: string, before?: Remembered): Promise<Remembered> => {
    const readAt = now();
    const known = before?.placement ?? (await locate(deviceId));
    if (!known) return { version: UNVERIFIED, readAt };
    const version = await versionOf(known);
    const placement = await locate(deviceId);
    return { ...(placement ? { placement } : {}), version, readAt };
  };
  const cache = new LRUCache<string, Remembered>({
    max,
    ttl: PLACE_MAX_AGE_MS,
    // With a clock of its own (tests), read it at every check rather than once a millisecond.
    ...(clock ? { perf: { now: clock }, ttlResolution: 0 } : {}),
    fetchMethod: (deviceId, before) => read(deviceId, before),
  });
  const current = async ({ placement, version, readAt }: Remembered) => (placement ? (await versionOf(placement)) === version : now() - readAt <= ttlMs);
  const placementOf = async (deviceId: string) => {
    const remembered = (await cache.fetch(deviceId))!;
    if (await current(remembered)) return remembered.placement;
    return (await cache.fetch(deviceId, { forceRefresh: true }))!.placement;
  };

  /** The placements of the devices, undefined for one that does not exist. */
  const lookup = async (deviceIds: Iterable<string>): Promise<Map<string, DevicePlacement | undefined>> => {
    const ids = [...new Set(deviceIds)];
    const placements = await Promise.all(ids.map(placementOf));
    return new Map(ids.map((id, i) => [id, placements[i]]));
  };
  /**
   * Keeps a placement read elsewhere (a claim of the device's points answers its locator), to be
   * checked at its next lookup: it was not read after its workspace's version, and that lookup
   * then reads the version and the locator only (the device's workspace is known).
   */
  const remember = (deviceId: string, placement: DevicePlacement) => void cache.set(deviceId, { placement, version: UNVERIFIED, readAt: now() });
  return Object.assign(lookup, { remember });
};

/**
 * What `devicePlaces` returns: a lookup of many devices at once, and a way to keep a placement read
 * elsewhere (absent in lookups that remember nothing).
 */
export type DevicePlacesLookup = ((deviceIds: Iterable<string>) => Promise<Map<string, DevicePlacement | undefined>>) & {
  remember?: (deviceId: string, placement: DevicePlacement) => void;
};
