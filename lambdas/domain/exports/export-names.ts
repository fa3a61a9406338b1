import { LRUCache } from 'lru-cache';
import type { Db } from '../../shared/clients';
import { getDeviceNames } from '../../stores/device-store';
import { getFleetNames } from '../../stores/fleet-store';
import type { RangePoint } from '../../stores/timeseries';

/** Device names and fleet names an export run keeps at most, each (the longest unused forgotten first). */
export const EXPORT_NAMES_CACHED = 10_000;

/** What an export with `names` adds to a point: its device's current name, its fleet's name ('' for one deleted since). */
export interface PointNames {
  device_name: string;
  fleet_name: string;
}

/** Names of the points of one read (`prepare`), to look up point by point (`of`). */
export interface ExportNames {
  prepare: (points: readonly RangePoint[]) => Promise<void>;
  of: (point: RangePoint) => PointNames;
}

/**
 * The names an export with `names` writes, read for each run of points the range read yields:
 * the devices and fleets not in the cache are read in batches of 100 (BatchGetItem), never one read
 * a row. The caches are bounded (EXPORT_NAMES_CACHED each); the names of the points being written
 * are kept apart, so that a run with more devices than the cache still names every point. An ID
 * that names nothing (a device or fleet deleted since) is remembered as ''.
 */
export const exportNames = (db: Db, workspaceId: string, max = EXPORT_NAMES_CACHED): ExportNames => {
  const devices = new LRUCache<string, { name: string }>({ max });
  const fleets = new LRUCache<string, { name: string }>({ max });
  let current = { devices: new Map<string, string>(), fleets: new Map<string, string>() };
  const fill = async (cache: LRUCache<string, { name: string }>, ids: Set<string>, read: (ids: string[]) => Promise<Map<string, string>>) => {
    const here = new Map<string, string>();
    const missing: string[] = [];
    for (const id of ids) {
      const known = cache.get(id);
      if (known) here.set(id, known.name);
      else missing.push(id);
    }
    if (missing.length) {
      const found = await read(missing);
      for (const id of missing) {
        const name = found.get(id) ?? '';
        cache.set(id, { name });
        here.set(id, name);
      }
    }
    return here;
  };
  return {
    prepare: async (points) => {
      const deviceIds = new Set<string>();
      const fleetIds = new Set<string>();
      for (const p of points) {
        deviceIds.add(p.device_id);
        fleetIds.add(p.fleet_id);
      }
      current = {
        devices: await fill(devices, deviceIds, (ids) => getDeviceNames(db, workspaceId, ids)),
        fleets: await fill(fleets, fleetIds, (ids) => getFleetNames(db, workspaceId, ids)),
      };
    },
    of: (p) => ({ device_name: current.devices.get(p.device_id) ?? '', fleet_name: current.fleets.get(p.fleet_id) ?? '' }),
  };
};
