import type { Db } from '../../shared/clients';
import { ConflictError, NotFoundError } from '../../shared/errors';
import type { Caller } from '../../shared/http';
import { newId, nowIso } from '../../shared/ids';
import type { CreateFleetBody, Fleet } from '../../schemas/fleet';
import type { PageQuery } from '../../schemas/list';
import type { StreamedList } from '../../shared/json-stream';
import { collection } from '../../stores/keys';
import {
  deleteMarkedFleet,
  findMissingFleets,
  fleetHoldsDevices,
  getFleetOfWorkspace,
  markFleetDeleting,
  putFleet,
  readFleetsOfWorkspace,
  unmarkFleetDeleting,
} from '../../stores/fleet-store';
import { quota, release } from '../limits/limits';
import { mapKeyed, pageSizeOf, paginate, startOf } from './lists';
import { requireWorkspace } from '../tenancy/workspaces';

const toFleet = ({ id, name, description, account_id, workspace_id, created_at }: Fleet): Fleet => ({
  id,
  name,
  description,
  account_id,
  workspace_id,
  created_at,
});

/**
 * The workspace's fleets, oldest first (ID order), streamed; a page of them when `page` asks.
 * @throws NotFoundError when the workspace is not the caller's.
 * @throws ValidationError when the cursor is not one of this list.
 */
export const listFleets = async (db: Db, caller: Caller, workspaceId: string, page: PageQuery = {}): Promise<StreamedList<Fleet>> => {
  await requireWorkspace(db, caller, workspaceId);
  const list = `fleets/${workspaceId}`;
  const after = startOf(list, page, collection.fleetsOfWorkspace(workspaceId).prefix);
  return paginate(list, mapKeyed(readFleetsOfWorkspace(db, workspaceId, { after, pageSize: pageSizeOf(page) }), toFleet), page);
};

/** @throws NotFoundError when the workspace is not the caller's or the fleet is not in it. */
export const getFleet = async (db: Db, caller: Caller, workspaceId: string, fleetId: string) => {
  await requireWorkspace(db, caller, workspaceId);
  const fleet = await getFleetOfWorkspace(db, workspaceId, fleetId);
  if (!fleet) throw new NotFoundError(`Fleet ${fleetId} not found.`);
  return toFleet(fleet);
};

/**
 * Creates a fleet within the workspace's quota of fleets.
 * @throws NotFoundError when the workspace is not the caller's.
 * @throws QuotaExceededError when the workspace holds its limit of fleets.
 */
export const createFleet = async (db: Db, caller: Caller, workspaceId: string, input: CreateFleetBody) => {
  const workspace = await requireWorkspace(db, caller, workspaceId);
  const created_at = nowIso();
  const fleet: Fleet = {
    id: newId('flt', created_at),
    name: input.name,
    description: input.description,
    account_id: caller.accountId,
    workspace_id: workspaceId,
    created_at,
  };
  await putFleet(db, fleet, quota(db, workspace, 'fleets'));
  return toFleet(fleet);
};

/**
 * Checks, before anything is written, that every named fleet is in the workspace.
 * @throws NotFoundError naming the first missing fleet, its details each missing one at `field`.
 */
export const requireFleets = async (db: Db, workspaceId: string, fleetIds: string[], field = 'query.fleet') => {
  const missing = await findMissingFleets(db, workspaceId, fleetIds);
  if (missing.length) {
    throw new NotFoundError(`Fleet ${missing[0]} not found.`, {
      details: missing.map((id) => ({ field, message: `Fleet ${id} not found.` })),
    });
  }
};

/**
 * Deletes an empty fleet and answers it as it was; its place in the workspace's quota of fleets is
 * free at once. Race-safe: the fleet is first marked, so that no device is created in it or moved
 * to it while it is checked for devices (stores/fleet-store.ts `fleetTakesDevices`); found holding
 * one, the mark goes and the fleet stays.
 * @throws NotFoundError when the workspace or the fleet is not the caller's.
 * @throws ConflictError for the workspace's default fleet, and while the fleet holds a device.
 */
export const deleteFleet = async (db: Db, caller: Caller, workspaceId: string, fleetId: string) => {
  const workspace = await requireWorkspace(db, caller, workspaceId);
  const fleet = await getFleetOfWorkspace(db, workspaceId, fleetId);
  if (!fleet) throw new NotFoundError(`Fleet ${fleetId} not found.`);
  if (fleet.id === workspace.default_fleet_id) throw new ConflictError('The default fleet cannot be deleted: a device created without fleet_id goes there.');
  const at = nowIso();
  if (!(await markFleetDeleting(db, workspaceId, fleetId, at))) throw new NotFoundError(`Fleet ${fleetId} not found.`);
  if (await fleetHoldsDevices(db, workspaceId, fleetId)) {
    await unmarkFleetDeleting(db, workspaceId, fleetId, at);
    throw new ConflictError(`Fleet ${fleetId} holds devices: move or delete them first.`);
  }
  if (!(await deleteMarkedFleet(db, workspaceId, fleetId, at, release(db, workspace, 'fleets')))) {
    if (!(await getFleetOfWorkspace(db, workspaceId, fleetId))) throw new NotFoundError(`Fleet ${fleetId} not found.`);
    throw new ConflictError(`Fleet ${fleetId} is being deleted by another request.`);
  }
  return toFleet(fleet);
};
