import { createWorkspace, getWorkspace, listWorkspaces } from '../domain/workspaces';
import { WORKSPACE_OPERATIONS } from '../schemas/operations/workspaces';
import { registryDb } from '../shared/clients';
import { callerOf, ok } from '../shared/http';
import { httpHandler } from '../shared/middleware';

export const handler = httpHandler('workspaces', WORKSPACE_OPERATIONS, {
  listWorkspaces: async (_input, event) => ok(200, { workspaces: await listWorkspaces(registryDb(), callerOf(event)) }),
  getWorkspace: async ({ path }, event) => ok(200, { workspace: await getWorkspace(registryDb(), callerOf(event), path.workspaceId) }),
  createWorkspace: async ({ body }, event) => ok(200, { workspace: await createWorkspace(registryDb(), callerOf(event), body) }),
});
