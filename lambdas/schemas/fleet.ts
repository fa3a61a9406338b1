import * as z from 'zod';
import { NextSchema } from './list';
import { AccountIdSchema, DateSchema, DescriptionSchema, FleetIdRefSchema, FleetIdSchema, NameSchema, WorkspaceIdRefSchema, WorkspaceIdSchema } from './common';

export const FleetSchema = z
  .object({
    id: FleetIdSchema,
    name: z.string(),
    description: z.string(),
    account_id: AccountIdSchema,
    workspace_id: WorkspaceIdSchema,
    created_at: DateSchema,
  })
  .meta({ id: 'Fleet' });
export type Fleet = z.infer<typeof FleetSchema>;

export const FleetPathSchema = z.strictObject({ workspaceId: WorkspaceIdRefSchema, fleetId: FleetIdRefSchema });

export const CreateFleetBodySchema = z.strictObject({ name: NameSchema, description: DescriptionSchema.default('') }).meta({ id: 'CreateFleet' });
export type CreateFleetBody = z.infer<typeof CreateFleetBodySchema>;

export const FleetResponseSchema = z.object({ fleet: FleetSchema });
export const FleetListResponseSchema = z.object({ fleets: z.array(FleetSchema), next: NextSchema });
