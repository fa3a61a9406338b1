import { CreateWorkspaceBodySchema, WorkspaceListResponseSchema, WorkspacePathSchema, WorkspaceResponseSchema } from '../workspace';
import type { Operations } from '../operation';

/** The `workspaces` handler's operations. */
export const WORKSPACE_OPERATIONS = {
  listWorkspaces: { response: WorkspaceListResponseSchema },
  createWorkspace: { body: CreateWorkspaceBodySchema, response: WorkspaceResponseSchema },
  getWorkspace: { path: WorkspacePathSchema, response: WorkspaceResponseSchema },
} satisfies Operations;
