import type { Db } from '../../shared/clients';
import { NotFoundError, ValidationError } from '../../shared/errors';
import type { Caller } from '../../shared/http';
import { newId, nowIso } from '../../shared/ids';
import type { StreamedList } from '../../shared/json-stream';
import type { Device } from '../../schemas/device';
import type { CreateGroupBody, Group, UpdateGroupBody } from '../../schemas/group';
import type { PageQuery } from '../../schemas/list';
import {
  deleteGroup as removeGroup,
  getGroupOfWorkspace,
  putGroup,
  readGroupsOfWorkspace,
  updateGroup as storeGroupUpdate,
  type GroupRecord,
} from '../../stores/group-store';
import { collection } from '../../stores/keys';
import type { WorkspaceRecord } from '../../stores/workspace-store';
import { quota, release } from '../limits/limits';
import { requireWorkspace } from '../tenancy/workspaces';
import { mapKeyed, pageSizeOf, paginate, startOf } from './lists';
import { parseQuery, type Query } from './query';
import { searchDevices } from './search';

const toGroup = ({ id, name, query, created_at, updated_at, used_by }: GroupRecord): Group => ({
  id,
  name,
  query,
  created_at,
  updated_at,
  used_by: [...(used_by ?? [])].sort(),
});

/**
 * A group's query parsed, its errors named where the request gave it (`body.query`), with the
 * parser's message (the character position and what was expected).
 * @throws ValidationError when it is not a query of the language.
 */
const parseGiven = (text: string, field = 'body.query'): Query => {
  try {
    return parseQuery(text);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    const details = error.details.length ? error.details : [{ field, message: error.message }];
    throw new ValidationError(`Invalid query: ${field} ${details[0].message}`, { details: details.map((d) => ({ ...d, field })), cause: error });
  }
};

/** The query a stored group saves, parsed (it was parsed before it was stored). */
export const queryOfGroup = (group: Pick<GroupRecord, 'query'>): Query => parseQuery(group.query);

/**
 * A group of the workspace, as stored. The caller has checked that the workspace is the caller's
 * (requireWorkspace): a group is found only in its own workspace's partition, so another
 * account's group is never found.
 * @throws NotFoundError when the workspace holds no such group.
 */
export const requireGroup = async (db: Db, workspaceId: string, groupId: string): Promise<GroupRecord> => {
  const group = await getGroupOfWorkspace(db, workspaceId, groupId);
  if (!group) throw new NotFoundError(`Group ${groupId} not found.`);
  return group;
};

/**
 * Saves a query as a group of the workspace, within its quota of groups.
 * @throws NotFoundError when the workspace is not the caller's.
 * @throws ValidationError naming `body.query` when the query is malformed (nothing is written).
 * @throws QuotaExceededError when the workspace holds its limit of groups.
 */
export const createGroup = async (db: Db, caller: Caller, workspaceId: string, input: CreateGroupBody) => {
  const workspace = await requireWorkspace(db, caller, workspaceId);
  parseGiven(input.query);
  const at = nowIso();
  const group: GroupRecord = {
    id: newId('grp', at),
    name: input.name,
    query: input.query,
    account_id: caller.accountId,
    workspace_id: workspaceId,
    created_at: at,
    updated_at: at,
  };
  await putGroup(db, group, quota(db, workspace, 'groups'));
  return toGroup(group);
};

/**
 * The workspace's groups, oldest first (ID order), streamed; a page of them when `page` asks.
 * @throws NotFoundError when the workspace is not the caller's.
 * @throws ValidationError when the cursor is not one of this list.
 */
export const listGroups = async (db: Db, caller: Caller, workspaceId: string, page: PageQuery = {}): Promise<StreamedList<Group>> => {
  await requireWorkspace(db, caller, workspaceId);
  const list = `groups/${workspaceId}`;
  const after = startOf(list, page, collection.groupsOfWorkspace(workspaceId).prefix);
  return paginate(list, mapKeyed(readGroupsOfWorkspace(db, workspaceId, { after, pageSize: pageSizeOf(page) }), toGroup), page);
};

/** How many devices of the workspace match a query now: one pass over what the search yields. */
const countMatching = async (db: Db, workspace: WorkspaceRecord, query: Query) => {
  let count = 0;
  for await (const _ of (await searchDevices(db, workspace, { query }, {})).items) count++;
  return count;
};

/**
 * A group with the number of devices that match its query now.
 * @throws NotFoundError when the workspace or the group is not the caller's.
 */
export const getGroup = async (db: Db, caller: Caller, workspaceId: string, groupId: string) => {
  const workspace = await requireWorkspace(db, caller, workspaceId);
  const group = await requireGroup(db, workspaceId, groupId);
  return { ...toGroup(group), device_count: await countMatching(db, workspace, queryOfGroup(group)) };
};

/**
 * The devices that match a group's query now, streamed and paged exactly as the device list
 * (oldest first, `limit`, `cursor`, `next`). Only the workspace's own devices are read.
 * @throws NotFoundError when the workspace or the group is not the caller's.
 * @throws ValidationError when the cursor is not one of this list.
 */
export const listGroupDevices = async (db: Db, caller: Caller, workspaceId: string, groupId: string, page: PageQuery = {}): Promise<StreamedList<Device>> => {
  const workspace = await requireWorkspace(db, caller, workspaceId);
  const group = await requireGroup(db, workspaceId, groupId);
  return searchDevices(db, workspace, { query: queryOfGroup(group) }, page);
};

/**
 * Renames a group or changes its query (membership follows at once: it is the query evaluated now).
 * @throws NotFoundError when the workspace or the group is not the caller's.
 * @throws ValidationError naming `body.query` when the new query is malformed (nothing is written).
 */
export const updateGroup = async (db: Db, caller: Caller, workspaceId: string, groupId: string, change: UpdateGroupBody) => {
  await requireWorkspace(db, caller, workspaceId);
  if (change.query !== undefined) parseGiven(change.query);
  return toGroup(await storeGroupUpdate(db, workspaceId, groupId, change, nowIso()));
};

/**
 * Deletes a group that nothing targets, freeing its place in the workspace's quota.
 * @throws NotFoundError when the workspace or the group is not the caller's.
 * @throws ConflictError while a continuous rollout or an alarm rule targets it (`used_by`).
 */
export const deleteGroup = async (db: Db, caller: Caller, workspaceId: string, groupId: string) => {
  const workspace = await requireWorkspace(db, caller, workspaceId);
  return toGroup(await removeGroup(db, workspaceId, groupId, release(db, workspace, 'groups')));
};
