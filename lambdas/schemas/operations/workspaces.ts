import { CreateWorkspaceBodySchema, UpdateWorkspaceBodySchema, WorkspaceListResponseSchema, WorkspacePathSchema, WorkspaceResponseSchema } from '../workspace';
import { PageQuerySchema } from '../list';
import type { Operations } from '../operation';

/** The `workspaces` handler's operations. */
export const WORKSPACE_OPERATIONS = {
  listWorkspaces: { query: PageQuerySchema, response: WorkspaceListResponseSchema },
  createWorkspace: {
    body: CreateWorkspaceBodySchema,
    response: WorkspaceResponseSchema,
    quota: 'The account holds its limit of workspaces (limits.workspaces_per_account)',
  },
  getWorkspace: { path: WorkspacePathSchema, response: WorkspaceResponseSchema },
  updateWorkspace: {
    path: WorkspacePathSchema,
    body: UpdateWorkspaceBodySchema,
    response: WorkspaceResponseSchema,
    conflict: 'The workspace’s data retention was changed by another request meanwhile: read it and try again',
  },
  deleteWorkspace: {
    path: WorkspacePathSchema,
    response: WorkspaceResponseSchema,
    conflict: 'The workspace holds devices: delete them first',
  },
} satisfies Operations;
