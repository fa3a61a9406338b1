import * as z from 'zod';
import { NextSchema } from './list';
import { AccountIdSchema, DateSchema, DescriptionSchema, NameSchema, WorkspaceIdRefSchema, WorkspaceIdSchema } from './common';

/** Bounds of a workspace's data retention, in days (spec/operations.md §4). */
export const DATA_RETENTION_DAYS_MIN = 1;
export const DATA_RETENTION_DAYS_MAX = 3650;

export const WorkspaceSchema = z
  .object({
    id: WorkspaceIdSchema,
    name: z.string(),
    account_id: AccountIdSchema,
    description: z.string(),
    created_at: DateSchema,
    data_retention_days: z.int().min(DATA_RETENTION_DAYS_MIN).max(DATA_RETENTION_DAYS_MAX).optional().meta({
      description:
        'Days a data point is kept after its timestamp_device, present while the workspace has a retention; absent: kept forever (the default, so a workspace never given one answers exactly its v3 fields). An addition to the v3 workspace',
    }),
  })
  .meta({ id: 'Workspace' });
export type Workspace = z.infer<typeof WorkspaceSchema>;

export const WorkspacePathSchema = z.strictObject({ workspaceId: WorkspaceIdRefSchema });

export const CreateWorkspaceBodySchema = z.strictObject({ name: NameSchema, description: DescriptionSchema.default('') }).meta({ id: 'CreateWorkspace' });
export type CreateWorkspaceBody = z.infer<typeof CreateWorkspaceBodySchema>;

/** What a PATCH of a workspace may change: its name, description and data retention; at least one of them. */
export const UpdateWorkspaceBodySchema = z
  .strictObject({
    name: NameSchema.optional(),
    description: DescriptionSchema.optional(),
    data_retention_days: z
      .int(`Must be a whole number of days from ${DATA_RETENTION_DAYS_MIN} to ${DATA_RETENTION_DAYS_MAX}, or null.`)
      .min(DATA_RETENTION_DAYS_MIN, `Must be at least ${DATA_RETENTION_DAYS_MIN} day, or null.`)
      .max(DATA_RETENTION_DAYS_MAX, `Must be at most ${DATA_RETENTION_DAYS_MAX} days, or null.`)
      .nullable()
      .optional()
      .meta({
        description: `Days a data point is kept after its timestamp_device (${DATA_RETENTION_DAYS_MIN}–${DATA_RETENTION_DAYS_MAX}); null: keep forever. Applies to points already stored at once`,
      }),
  })
  .refine((body) => Object.keys(body).length > 0, 'Give at least one field to change.')
  .meta({ id: 'UpdateWorkspace', minProperties: 1 });
export type UpdateWorkspaceBody = z.infer<typeof UpdateWorkspaceBodySchema>;

export const WorkspaceResponseSchema = z.object({ workspace: WorkspaceSchema });
export const WorkspaceListResponseSchema = z.object({ workspaces: z.array(WorkspaceSchema), next: NextSchema });
