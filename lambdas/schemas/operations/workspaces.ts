import { CreateWorkspaceBodySchema, WorkspaceListResponseSchema, WorkspacePathSchema, WorkspaceResponseSchema } from '../workspace';
import { PageQuerySchema } from '../list';
import type { Operations } from '../operation';

/** The `workspaces` handler's operations. */
export const WORKSPACE_OPERATIONS = {
  listWorkspaces: { query: PageQuerySchema, response: WorkspaceListResponseSchema },
  createWorkspace: { body: CreateWorkspaceBodySchema, response: WorkspaceResponseSchema },
  getWorkspace: { path: WorkspacePathSchema, response: WorkspaceResponseSchema },
} satisfies Operations;
