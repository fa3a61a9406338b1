import type { Db } from '../../shared/clients';
import { NotFoundError } from '../../shared/errors';
import type { Caller } from '../../shared/http';
import { newId, nowIso } from '../../shared/ids';
import { noteWorkspace } from '../../shared/request-scope';
import type { PageQuery } from '../../schemas/list';
import type { RestampJob } from '../../schemas/retention';
import type { CreateWorkspaceBody, UpdateWorkspaceBody, Workspace } from '../../schemas/workspace';
import type { StreamedList } from '../../shared/json-stream';
import type { Keyed } from '../../stores/items';
import { collection } from '../../stores/keys';
import type { FleetRecord } from '../../stores/fleet-store';
import { initialCounts } from '../../stores/limits-store';
import { accountQuota } from '../limits/limits';
import {
  createWorkspaceWithDefaultFleet,
  getWorkspaceOfAccount,
  readWorkspacesOfAccount,
  updateWorkspace as storeUpdate,
  type WorkspaceRecord,
} from '../../stores/workspace-store';
import { pageSizeOf, paginate, startOf } from '../registry/lists';
import { restampFrom, retentionSettleMs, type EnqueueRestamp } from '../data/retention';

export const DEFAULT_FLEET_NAME = 'default';

/** A stored workspace as the API answers it. */
export const toWorkspace = ({ id, name, account_id, description, created_at, data_retention_days }: WorkspaceRecord): Workspace => ({
  id,
  name,
  account_id,
  description,
  created_at,
  ...(typeof data_retention_days === 'number' && { data_retention_days }),
});

/**
 * A new workspace record and its `default` fleet, not yet stored, its quotas' counts started (the
 * fleet, and `apiKeys` keys created in the same transaction).
 */
export const newWorkspace = (accountId: string, input: CreateWorkspaceBody, { apiKeys = 0 } = {}) => {
  const created_at = nowIso();
  const workspaceId = newId('wks', created_at);
  const fleet: FleetRecord = {
    id: newId('flt', created_at),
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
    ...initialCounts(apiKeys),
  };
  return { workspace, fleet };
};

/**
 * The caller's workspace, as stored; an API request found on it counts in its usage.
 * @throws NotFoundError when it is not a workspace of the caller's account (or it is being deleted).
 */
export const requireWorkspace = async (db: Db, caller: Caller, workspaceId: string) => {
  const workspace = await getWorkspaceOfAccount(db, caller.accountId, workspaceId);
  // A workspace being deleted is gone for every route already.
  if (!workspace || workspace.deleting_at !== undefined) throw new NotFoundError(`Workspace ${workspaceId} not found.`);
  noteWorkspace(workspace.id);
  return workspace;
};

/**
 * Every workspace of the caller's account, streamed: the key's bound workspace first, then the
 * others oldest first (ID order); a page of them when `page` asks.
 * @throws ValidationError when the cursor is not one of this account's workspace list.
 */
export const listWorkspaces = async (db: Db, caller: Caller, page: PageQuery = {}): Promise<StreamedList<Workspace>> => {
  const list = `workspaces/${caller.accountId}`;
  const after = startOf(list, page, collection.workspacesOfAccount(caller.accountId).prefix);
  async function* source(): AsyncGenerator<Keyed<Workspace>> {
    // The bound workspace's place is the empty key: a cursor of "" resumes with the others.
    // A session (no bound workspace) lists them all oldest first.
    if (after === undefined && caller.workspaceId) {
      const bound = await getWorkspaceOfAccount(db, caller.accountId, caller.workspaceId);
      if (bound) yield { sk: '', value: toWorkspace(bound) };
    }
    const others = readWorkspacesOfAccount(db, caller.accountId, { after: after || undefined, pageSize: pageSizeOf(page) });
    for await (const { sk, value } of others) if (value.id !== caller.workspaceId) yield { sk, value: toWorkspace(value) };
  }
  return paginate(list, source(), page);
};

/** @throws NotFoundError when it is not a workspace of the caller's account. */
export const getWorkspace = async (db: Db, caller: Caller, workspaceId: string) => toWorkspace(await requireWorkspace(db, caller, workspaceId));

/**
 * Creates a workspace with its `default` fleet, all or nothing, counted in its account's
 * `workspaces_per_account` in the same transaction.
 * @throws QuotaExceededError when the account holds its limit of workspaces.
 */
export const createWorkspace = async (db: Db, caller: Caller, input: CreateWorkspaceBody) => {
  const { workspace, fleet } = newWorkspace(caller.accountId, input);
  await createWorkspaceWithDefaultFleet(db, workspace, fleet, await accountQuota(db, caller.accountId, 'workspaces_per_account'));
  return toWorkspace(workspace);
};

/**
 * Changes a workspace's name, description or data retention. Reads apply a new retention at once
 * (the domain filters every read by it). The expiry stored with each point follows through a
 * re-stamp job, queued before the change is written (a job whose change was never written finds
 * another version and does nothing) and run once every point the ingest writes carries the new
 * setting (`retentionSettleMs`). A setting sent again unchanged writes no new version, but queues
 * the job again while the workspace still owes one (the retry of a change whose job was lost).
 * @throws NotFoundError when it is not a workspace of the caller's account; ConflictError when its
 * retention changed meanwhile.
 */
export const updateWorkspace = async (db: Db, enqueue: EnqueueRestamp, caller: Caller, workspaceId: string, change: UpdateWorkspaceBody, now = Date.now()) => {
  const current = await requireWorkspace(db, caller, workspaceId);
  const before = current.data_retention_days ?? null;
  const after = change.data_retention_days === undefined ? before : change.data_retention_days;
  const version = (current.retention_version ?? 0) + 1;
  const job = (v: number): RestampJob => ({
    kind: 'restamp',
    account_id: caller.accountId,
    workspace_id: workspaceId,
    version: v,
    not_before: now + retentionSettleMs(),
  });
  if (after === before) {
    if (change.data_retention_days !== undefined && current.retention_owed_from !== undefined && current.retention_version) {
      await enqueue(job(current.retention_version), retentionSettleMs() / 1000);
    }
    if (change.name === undefined && change.description === undefined) return toWorkspace(current);
    return toWorkspace(await storeUpdate(db, caller.accountId, workspaceId, { name: change.name, description: change.description }));
  }
  await enqueue(job(version), retentionSettleMs() / 1000);
  const retention = { days: after, version, owedFrom: restampFrom(before, after, now, current.retention_owed_from) };
  return toWorkspace(await storeUpdate(db, caller.accountId, workspaceId, { name: change.name, description: change.description, retention }));
};
