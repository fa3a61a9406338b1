import { apiRequestHooks } from '../../domain/limits/api-requests';
import { enqueueRestamp } from '../../domain/data/retention';
import { deleteWorkspace } from '../../domain/tenancy/workspace-deletion';
import { createWorkspace, getWorkspace, listWorkspaces, updateWorkspace } from '../../domain/tenancy/workspaces';
import { WORKSPACE_OPERATIONS } from '../../schemas/operations/workspaces';
import { registryDb } from '../../shared/clients';
import { callerOf, ok } from '../../shared/http';
import { streamList } from '../../shared/json-stream';
import { httpHandler } from '../../shared/middleware';

export const handler = httpHandler(
  'workspaces',
  WORKSPACE_OPERATIONS,
  {
    listWorkspaces: async ({ query }, event) => streamList(event, 'workspaces', await listWorkspaces(registryDb(), callerOf(event), query)),
    getWorkspace: async ({ path }, event) => ok(200, { workspace: await getWorkspace(registryDb(), callerOf(event), path.workspaceId) }),
    createWorkspace: async ({ body }, event) => ok(200, { workspace: await createWorkspace(registryDb(), callerOf(event), body) }),
    deleteWorkspace: async ({ path }, event) => ok(200, { workspace: await deleteWorkspace(registryDb(), callerOf(event), path.workspaceId) }),
    updateWorkspace: async ({ path, body }, event) =>
      ok(200, { workspace: await updateWorkspace(registryDb(), enqueueRestamp, callerOf(event), path.workspaceId, body) }),
  },
  apiRequestHooks(registryDb()),
);
