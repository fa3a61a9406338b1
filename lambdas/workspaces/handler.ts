import { createWorkspace, getWorkspace, listWorkspaces } from '../domain/workspaces';
import { CreateWorkspaceBodySchema, WorkspacePathSchema } from '../schemas/workspace';
import { registryDb } from '../shared/clients';
import { callerOf, ok, parseBody, parsePath, type ApiEvent } from '../shared/http';
import { httpHandler } from '../shared/middleware';

const listWorkspacesRoute = async (event: ApiEvent) =>
  ok(200, { workspaces: await listWorkspaces(registryDb(), callerOf(event)) });

const getWorkspaceRoute = async (event: ApiEvent) => {
  const { workspaceId } = parsePath(WorkspacePathSchema, event);
  return ok(200, { workspace: await getWorkspace(registryDb(), callerOf(event), workspaceId) });
};

const createWorkspaceRoute = async (event: ApiEvent) => {
  const body = parseBody(CreateWorkspaceBodySchema, event);
  return ok(200, { workspace: await createWorkspace(registryDb(), callerOf(event), body) });
};

export const handler = httpHandler('workspaces', {
  listWorkspaces: listWorkspacesRoute,
  getWorkspace: getWorkspaceRoute,
  createWorkspace: createWorkspaceRoute,
});
