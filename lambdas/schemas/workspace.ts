import * as z from 'zod';
import { NextSchema } from './list';
import { AccountIdSchema, DateSchema, DescriptionSchema, NameSchema, WorkspaceIdRefSchema, WorkspaceIdSchema } from './common';

export const WorkspaceSchema = z
  .object({
    id: WorkspaceIdSchema,
    name: z.string(),
    account_id: AccountIdSchema,
    description: z.string(),
    created_at: DateSchema,
  })
  .meta({ id: 'Workspace' });
export type Workspace = z.infer<typeof WorkspaceSchema>;

export const WorkspacePathSchema = z.strictObject({ workspaceId: WorkspaceIdRefSchema });

export const CreateWorkspaceBodySchema = z
  .strictObject({ name: NameSchema, description: DescriptionSchema.default('') })
  .meta({ id: 'CreateWorkspace' });
export type CreateWorkspaceBody = z.infer<typeof CreateWorkspaceBodySchema>;

export const WorkspaceResponseSchema = z.object({ workspace: WorkspaceSchema });
export const WorkspaceListResponseSchema = z.object({ workspaces: z.array(WorkspaceSchema), next: NextSchema });
