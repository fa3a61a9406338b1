import { DeviceListResponseSchema } from '../device';
import {
  CreateGroupBodySchema,
  GroupListResponseSchema,
  GroupPathSchema,
  GroupResponseSchema,
  GroupWithCountResponseSchema,
  UpdateGroupBodySchema,
} from '../group';
import { PageQuerySchema } from '../list';
import type { Operations } from '../operation';
import { WorkspacePathSchema } from '../workspace';

/** The `groups` handler's operations: saved queries of the device search (spec/fleet-state.md §2). */
export const GROUP_OPERATIONS = {
  listGroups: { path: WorkspacePathSchema, query: PageQuerySchema, response: GroupListResponseSchema },
  createGroup: {
    path: WorkspacePathSchema,
    body: CreateGroupBodySchema,
    response: GroupResponseSchema,
    status: 201,
    quota: 'The workspace holds its limit of groups (limits.groups)',
  },
  getGroup: { path: GroupPathSchema, response: GroupWithCountResponseSchema },
  // limit and cursor: a page, exactly as the device list.
  listGroupDevices: { path: GroupPathSchema, query: PageQuerySchema, response: DeviceListResponseSchema },
  updateGroup: { path: GroupPathSchema, body: UpdateGroupBodySchema, response: GroupResponseSchema },
  deleteGroup: {
    path: GroupPathSchema,
    response: GroupResponseSchema,
    conflict: 'A continuous rollout or an alarm rule targets the group (its `used_by`): end it first',
  },
} satisfies Operations;
