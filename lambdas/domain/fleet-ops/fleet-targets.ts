import type { Db } from '../../shared/clients';
import type { Caller } from '../../shared/http';
import { advanceScheduleClock, listDevicePlacementPages } from '../../stores/device-store';
import { fleetAtSnapshot } from '../../stores/fleet-history';
import type { DeviceTarget } from '../../stores/job-store';
import { requireFleets } from '../registry/fleets';
import { requireWorkspace } from '../tenancy/workspaces';
import type { DryRun } from '../../schemas/dry-run';

/**
 * Where a fleet-wide scheduling starts, before anything is written: the workspace and every named
 * fleet are the caller's.
 * @returns the workspace.
 * @throws NotFoundError when the workspace or a named fleet is not the caller's.
 */
export const requireTargets = async (db: Db, caller: Caller, workspaceId: string, fleetIds: string[] = []) => {
  const workspace = await requireWorkspace(db, caller, workspaceId);
  if (fleetIds.length) await requireFleets(db, workspaceId, fleetIds);
  return workspace;
};

/**
 * The devices of a fleet-wide scheduling whose targets were checked (`requireTargets`): it advances
 * the workspace's scheduling clock, whose value is the scheduling's **snapshot**: the devices it
 * targets are exactly those that were in the chosen fleets (any fleet when none is named) when the
 * clock moved, however they move meanwhile (stores/fleet-history.ts). Each device's target names
 * its fleet at the snapshot; pages come in device ID order (the snapshot order of a rate-limited
 * rollout's releases).
 */
export const snapshotTargets = async (db: Db, workspaceId: string, fleetIds: string[] = []) => {
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

/**
 * A fleet-wide scheduling's dry run: how many devices it would target now (those in the chosen
 * fleets, every fleet when none is named), counted from the same device list the scheduling reads,
 * without advancing the scheduling clock or writing anything. Targets were checked (`requireTargets`).
 */
export const countTargets = async (db: Db, workspaceId: string, fleetIds: string[] = []): Promise<DryRun> => {
  const wanted = fleetIds.length ? new Set(fleetIds) : undefined;
  let targets = 0;
  for await (const page of listDevicePlacementPages(db, workspaceId)) {
    for (const device of page) {
      // its fleet now: that of its latest stay
      const fleet = fleetAtSnapshot(device, Number.MAX_SAFE_INTEGER);
      if (fleet !== undefined && (!wanted || wanted.has(fleet))) targets++;
    }
  }
  return { dry_run: true, targets, fleet_ids: fleetIds.length ? fleetIds : null };
};
