import type { Db } from '../shared/clients';
import { findDeviceLocator, getDeviceOfWorkspace } from '../stores/device-store';
import type { DevicePlace } from './events';

/** Where a device's points are stored and what they are forwarded with. */
export interface DevicePlacement extends DevicePlace {
  device_name: string;
}

export interface DevicePlacesOptions {
  /** How long an answer is used, in milliseconds: the staleness bound of a move or a rename. */
  ttlMs: number;
  /** Devices remembered at most (about 200 bytes each); the longest unused forgotten first. */
  max: number;
  now?: () => number;
}

/**
 * Looks up devices by ID (their locator: one eventually consistent read), remembering each answer for
 * `ttlMs`, unknown devices included. The MQTT door's data path uses it: a publish names only its
 * device, and two reads a publish would cost more than the publish itself. A device moved to
 * another fleet or renamed is therefore seen so within `ttlMs`: its points until then carry the
 * fleet and name it had. Lookups of one device at once share one read.
 */
export const devicePlaces = (db: Db, { ttlMs, max, now = Date.now }: DevicePlacesOptions) => {
  const known = new Map<string, { placement?: DevicePlacement; until: number }>();
  const reading = new Map<string, Promise<DevicePlacement | undefined>>();

  // The locator carries the fleet and name: one read, eventually consistent (what is read is kept
  // for minutes anyway). A locator written before it did sends the read on to the device.
  const read = async (deviceId: string): Promise<DevicePlacement | undefined> => {
    const locator = await findDeviceLocator(db, deviceId, { consistent: false });
    if (!locator) return undefined;
    if (locator.fleet_id !== undefined && locator.name !== undefined) {
      return { workspace_id: locator.workspace_id, fleet_id: locator.fleet_id, device_id: deviceId, device_name: locator.name };
    }
    const device = await getDeviceOfWorkspace(db, locator.workspace_id, deviceId);
    return device && { workspace_id: device.workspace_id, fleet_id: device.fleet_id, device_id: device.id, device_name: device.name };
  };

  const placementOf = (deviceId: string): Promise<DevicePlacement | undefined> => {
    const hit = known.get(deviceId);
    if (hit && hit.until > now()) return Promise.resolve(hit.placement);
    const inFlight = reading.get(deviceId);
    if (inFlight) return inFlight;
    const lookup = read(deviceId)
      .then((placement) => {
        known.delete(deviceId);
        known.set(deviceId, { placement, until: now() + ttlMs });
        if (known.size > max) known.delete(known.keys().next().value as string);
        return placement;
      })
      .finally(() => reading.delete(deviceId));
    reading.set(deviceId, lookup);
    return lookup;
  };

  /** The placements of the devices, undefined for one that does not exist. */
  return async (deviceIds: Iterable<string>): Promise<Map<string, DevicePlacement | undefined>> => {
    const ids = [...new Set(deviceIds)];
    const placements = await Promise.all(ids.map(placementOf));
    return new Map(ids.map((id, i) => [id, placements[i]]));
  };
};

/** What `devicePlaces` returns: a lookup of many devices at once. */
export type DevicePlacesLookup = ReturnType<typeof devicePlaces>;
