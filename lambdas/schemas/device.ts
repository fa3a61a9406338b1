import * as z from 'zod';
import {
  AccountIdSchema,
  DateSchema,
  DeviceIdRefSchema,
  DeviceIdSchema,
  FleetIdRefSchema,
  FleetIdSchema,
  NameSchema,
  WorkspaceIdRefSchema,
  WorkspaceIdSchema,
} from './common';

const PhysIdSchema = z
  .string()
  .max(128, 'Must be at most 128 characters.')
  .meta({ description: 'Physical device ID (empty until known)' });

/** One credential of a device (never its secret). */
export const DeviceIdentitySchema = z
  .object({ id: z.string(), type: z.string(), created_at: DateSchema })
  .meta({ id: 'DeviceIdentity' });

export const DeviceSchema = z
  .object({
    id: DeviceIdSchema,
    name: z.string(),
    account_id: AccountIdSchema,
    fleet_id: FleetIdSchema,
    fleet_name: z.string(),
    workspace_id: WorkspaceIdSchema,
    workspace_name: z.string(),
    created_at: DateSchema,
    phys_id: z.string(),
    identities: z.array(DeviceIdentitySchema).nullable(),
  })
  .meta({ id: 'Device' });
export type Device = z.infer<typeof DeviceSchema>;

export const DevicePathSchema = z.strictObject({ workspaceId: WorkspaceIdRefSchema, deviceId: DeviceIdRefSchema });

export const CreateDeviceBodySchema = z
  .strictObject({ name: NameSchema, fleet_id: FleetIdRefSchema.optional(), phys_id: PhysIdSchema.default('') })
  .meta({ id: 'CreateDevice' });
export type CreateDeviceBody = z.infer<typeof CreateDeviceBodySchema>;

export const UpdateDeviceBodySchema = z
  .strictObject({ name: NameSchema, fleet_id: FleetIdRefSchema, phys_id: PhysIdSchema.optional() })
  .meta({ id: 'UpdateDevice' });
export type UpdateDeviceBody = z.infer<typeof UpdateDeviceBodySchema>;

export const DeviceResponseSchema = z.object({ device: DeviceSchema });
export const DeviceListResponseSchema = z.object({ devices: z.array(DeviceSchema) });
