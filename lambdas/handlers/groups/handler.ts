import { apiRequestHooks } from '../../domain/limits/api-requests';
import { createGroup, deleteGroup, getGroup, listGroupDevices, listGroups, updateGroup } from '../../domain/registry/groups';
import { GROUP_OPERATIONS } from '../../schemas/operations/groups';
import { registryDb } from '../../shared/clients';
import { callerOf, ok } from '../../shared/http';
import { streamList } from '../../shared/json-stream';
import { httpHandler } from '../../shared/middleware';

export const handler = httpHandler(
  'groups',
  GROUP_OPERATIONS,
  {
    listGroups: async ({ path, query }, event) => streamList(event, 'groups', await listGroups(registryDb(), callerOf(event), path.workspaceId, query)),
    createGroup: async ({ path, body }, event) => ok(201, { group: await createGroup(registryDb(), callerOf(event), path.workspaceId, body) }),
    getGroup: async ({ path }, event) => ok(200, { group: await getGroup(registryDb(), callerOf(event), path.workspaceId, path.groupId) }),
    listGroupDevices: async ({ path, query }, event) =>
      streamList(event, 'devices', await listGroupDevices(registryDb(), callerOf(event), path.workspaceId, path.groupId, query)),
    updateGroup: async ({ path, body }, event) => ok(200, { group: await updateGroup(registryDb(), callerOf(event), path.workspaceId, path.groupId, body) }),
    deleteGroup: async ({ path }, event) => ok(200, { group: await deleteGroup(registryDb(), callerOf(event), path.workspaceId, path.groupId) }),
  },
  apiRequestHooks(registryDb()),
);
