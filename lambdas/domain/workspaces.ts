import type { Db } from '../shared/clients';
import { NotFoundError } from '../shared/errors';
import type { Caller } from '../shared/http';
import { newId, nowIso } from '../shared/ids';
import type { CreateWorkspaceBody, Workspace } from '../schemas/workspace';
import type { FleetRecord } from '../stores/fleet-store';
import {
  createWorkspaceWithDefaultFleet,
  getWorkspaceOfAccount,
  listWorkspacesOfAccount,
  type WorkspaceRecord,
} from '../stores/workspace-store';

export const DEFAULT_FLEET_NAME = 'default';

const toWorkspace = ({ id, name, account_id, description, created_at }: WorkspaceRecord): Workspace => ({
  id,
  name,
  account_id,
  description,
  created_at,
});

/** A new workspace record and its `default` fleet, not yet stored. */
export const newWorkspace = (accountId: string, input: CreateWorkspaceBody) => {
  const created_at = nowIso();
  const workspaceId = newId('wks');
  const fleet: FleetRecord = {
    id: newId('flt'),
    name: DEFAULT_FLEET_NAME,
    description: 'Devices created without a fleet',
    account_id: accountId,
    workspace_id: workspaceId,
    created_at,
  };
  const workspace: WorkspaceRecord = {
    id: workspaceId,
    name: input.name,
    description: input.description,
    account_id: accountId,
    created_at,
    default_fleet_id: fleet.id,
  };
  return { workspace, fleet };
};

/**
 * The caller's workspace, as stored.
 * @throws NotFoundError when it is not a workspace of the caller's account.
 */
export const requireWorkspace = async (db: Db, caller: Caller, workspaceId: string) => {
  const workspace = await getWorkspaceOfAccount(db, caller.accountId, workspaceId);
  if (!workspace) throw new NotFoundError(`Workspace ${workspaceId} not found.`);
  return workspace;
};

/** Every workspace of the caller's account: the key's bound workspace first, then oldest first. */
export const listWorkspaces = async (db: Db, caller: Caller): Promise<Workspace[]> => {
  const all = await listWorkspacesOfAccount(db, caller.accountId);
  const rank = (w: WorkspaceRecord) => (w.id === caller.workspaceId ? 0 : 1);
  return all
    .sort((a, b) => rank(a) - rank(b) || a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id))
    .map(toWorkspace);
};

/** @throws NotFoundError when it is not a workspace of the caller's account. */
export const getWorkspace = async (db: Db, caller: Caller, workspaceId: string) =>
  toWorkspace(await requireWorkspace(db, caller, workspaceId));

/** Creates a workspace with its `default` fleet, all or nothing. */
export const createWorkspace = async (db: Db, caller: Caller, input: CreateWorkspaceBody) => {
  const { workspace, fleet } = newWorkspace(caller.accountId, input);
  await createWorkspaceWithDefaultFleet(db, workspace, fleet);
  return toWorkspace(workspace);
};
