import type { Device } from './api';

/** The list call names are read with: the workspace's devices, or only those of some fleets. */
export type ListDevices = (fleets?: string[]) => Promise<Pick<Device, 'id' | 'name'>[]>;

/** The list API's cap on `?fleet=` values. */
const MAX_FLEETS = 100;

/**
 * Names of devices (device ID → name) with one list call, two at most: the devices of the fleets
 * their points were stored under (`wanted`: device ID → fleet ID), then, only when some are not
 * among them (a device moved to another fleet since), the workspace's whole list. Every device a
 * list answers is named, not only the wanted ones, so later pages need not ask again. A failed
 * fleet list falls back to the whole list; a failed whole list is thrown.
 */
export const readDeviceNames = async (listDevices: ListDevices, wanted: ReadonlyMap<string, string>): Promise<Map<string, string>> => {
  const names = new Map<string, string>();
  const add = (devices: Pick<Device, 'id' | 'name'>[]) => {
    for (const { id, name } of devices) names.set(id, name);
  };
  const fleets = [...new Set(wanted.values())].filter(Boolean);
  if (fleets.length > 0 && fleets.length <= MAX_FLEETS) add(await listDevices(fleets).catch(() => []));
  if ([...wanted.keys()].some((id) => !names.has(id))) add(await listDevices());
  return names;
};
