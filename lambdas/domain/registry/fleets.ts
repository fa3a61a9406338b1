import type { Db } from '../../shared/clients';
import { NotFoundError } from '../../shared/errors';
import type { Caller } from '../../shared/http';
import { newId, nowIso } from '../../shared/ids';
import type { CreateFleetBody, Fleet } from '../../schemas/fleet';
import type { PageQuery } from '../../schemas/list';
import type { StreamedList } from '../../shared/json-stream';
import { collection } from '../../stores/keys';
import { findMissingFleets, getFleetOfWorkspace, putFleet, readFleetsOfWorkspace } from '../../stores/fleet-store';
import { quota } from '../limits/limits';
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
