import type { Db } from '../../shared/clients';
import type { Caller } from '../../shared/http';
import { advanceScheduleClock, listDevicePlacementPages, type DevicePlacement } from '../../stores/device-store';
import { fleetAtSnapshot } from '../../stores/fleet-history';
import type { DeviceTarget } from '../../stores/job-store';
import { requireFleets } from '../registry/fleets';
import { requireGroup } from '../registry/groups';
import { matchesQuery, parseQuery, type Query, type SearchableDevice } from '../registry/query';
import { requireWorkspace } from '../tenancy/workspaces';
import type { DryRun } from '../../schemas/dry-run';

/** What a fleet-wide scheduling asks to target besides its fleets: a group (`group=`) or a query (`q=`), never both (the schema says so). */
export interface TargetQuery {
  groupId?: string;
  q?: string;
}

/** A scheduling's target as checked: the query its devices must match (none: every device of the fleets), and where it came from. */
export interface ResolvedTarget {
  query?: Query;
  group_id?: string;
  q?: string;
}

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
 * The query a scheduling's `group` or `q` stands for, checked (after the workspace): a group is the
 * workspace's (its query as it reads now), a query parses.
 * @throws NotFoundError when the group is not one of the workspace's; ValidationError (`query.q`) for a malformed query.
 */
export const resolveTarget = async (db: Db, workspaceId: string, { groupId, q }: TargetQuery = {}): Promise<ResolvedTarget> => {
  if (groupId !== undefined) {
    const group = await requireGroup(db, workspaceId, groupId);
    return { query: parseQuery(group.query), group_id: groupId };
  }
  if (q !== undefined) return { query: parseQuery(q), q };
  return {};
};

/** A device as the query language sees it, in the fleet it is taken in (at the snapshot, or now). */
export const searchableOf = (device: Record<string, unknown>, fleetId: string): SearchableDevice =>
  ({ ...device, fleet_id: fleetId, tags: (device.tags as Record<string, string> | undefined) ?? {} }) as unknown as SearchableDevice;

/** Whether a device in `fleetId` is targeted: in one of `fleetIds` (any fleet when none) and matching the query, if any. */
export const isTargeted = (fleetIds: readonly string[], query: Query | undefined, device: Record<string, unknown>, fleetId: string) =>
  (!fleetIds.length || fleetIds.includes(fleetId)) && (!query || matchesQuery(query, searchableOf(device, fleetId)));

/** The devices of the workspace, whole items when a query is to be matched (the placements alone otherwise). */
const devicePages = (db: Db, workspaceId: string, query: Query | undefined): AsyncIterable<DevicePlacement[]> =>
  listDevicePlacementPages(db, workspaceId, { whole: query !== undefined });

/**
 * The devices of a fleet-wide scheduling whose targets were checked (`requireTargets`): it advances
 * the workspace's scheduling clock, whose value is the scheduling's **snapshot**: the devices it
 * targets are exactly those that were in the chosen fleets (any fleet when none is named) when the
 * clock moved, however they move meanwhile (stores/fleet-history.ts), and that match `query` (when
 * given) as they read when the scheduling reads them. Each device's target names its fleet at the
 * snapshot; pages come in device ID order (the snapshot order of a rate-limited rollout's releases).
 */
export const snapshotTargets = async (db: Db, workspaceId: string, fleetIds: string[] = [], query?: Query) => {
  const snapshot = await advanceScheduleClock(db, workspaceId);
  return (async function* (): AsyncGenerator<DeviceTarget[]> {
    for await (const page of devicePages(db, workspaceId, query)) {
      yield page.flatMap((device) => {
        const fleet = fleetAtSnapshot(device, snapshot);
        if (fleet === undefined || !isTargeted(fleetIds, query, device, fleet)) return [];
        return [{ workspace_id: workspaceId, fleet_id: fleet, device_id: device.id, ...(device.connected ? { deliver_live: true } : {}) }];
      });
    }
  })();
};

/**
 * A fleet-wide scheduling's dry run: how many devices it would target now (those in the chosen
 * fleets, every fleet when none is named, that match `query` when given), counted from the same
 * device list the scheduling reads, without advancing the scheduling clock or writing anything.
 * Targets were checked (`requireTargets`, `resolveTarget`).
 */
export const countTargets = async (db: Db, workspaceId: string, fleetIds: string[] = [], query?: Query): Promise<DryRun> => {
  let targets = 0;
  for await (const page of devicePages(db, workspaceId, query)) {
    for (const device of page) {
      // its fleet now: that of its latest stay
      const fleet = fleetAtSnapshot(device, Number.MAX_SAFE_INTEGER);
      if (fleet !== undefined && isTargeted(fleetIds, query, device, fleet)) targets++;
    }
  }
  return { dry_run: true, targets, fleet_ids: fleetIds.length ? fleetIds : null };
};
