import type { Db } from '../../shared/clients';
import type { Caller } from '../../shared/http';
import { advanceScheduleClock, listDevicePlacementPages } from '../../stores/device-store';
import { fleetAtSnapshot } from '../../stores/fleet-history';
import type { DeviceTarget } from '../../stores/job-store';
import { requireFleets } from '../registry/fleets';
import { requireWorkspace } from '../tenancy/workspaces';

/**
 * Where a fleet-wide scheduling starts: it checks the workspace and every named fleet (before
 * anything is written), then advances the workspace's scheduling clock. Its value is the
 * scheduling's **snapshot**: the devices it targets are exactly those that were in the chosen
 * fleets (any fleet when none is named) when the clock moved, however they move meanwhile
 * (stores/fleet-history.ts). Each device's target names its fleet at the snapshot; pages come in
 * device ID order (the snapshot order of a rate-limited rollout's releases).
 * @throws NotFoundError when the workspace or a named fleet is not the caller's.
 */
export const snapshotTargets = async (db: Db, caller: Caller, workspaceId: string, fleetIds: string[] = []) => {
  await requireWorkspace(db, caller, workspaceId);
  if (fleetIds.length) await requireFleets(db, workspaceId, fleetIds);
  const snapshot = await advanceScheduleClock(db, workspaceId);
  const wanted = fleetIds.length ? new Set(fleetIds) : undefined;
  return (async function* (): AsyncGenerator<DeviceTarget[]> {
    for await (const page of listDevicePlacementPages(db, workspaceId)) {
      yield page.flatMap((device) => {
        const fleet = fleetAtSnapshot(device, snapshot);
        if (fleet === undefined || (wanted && !wanted.has(fleet))) return [];
        return [{ workspace_id: workspaceId, fleet_id: fleet, device_id: device.id, ...(device.connected ? { deliver_live: true } : {}) }];
      });
    }
  })();
};
