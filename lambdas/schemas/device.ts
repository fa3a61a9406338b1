import * as z from 'zod';
import { NextSchema } from './list';
import { TagChangesSchema, TagsSchema } from './tags';
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

const PhysIdSchema = z.string().max(128, 'Must be at most 128 characters.').meta({ description: 'Physical device ID (empty until known)' });

/** One credential of a device (never its secret). */
export const DeviceIdentitySchema = z.object({ id: z.string(), type: z.string(), created_at: DateSchema }).meta({ id: 'DeviceIdentity' });

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
    connected: z.boolean().meta({ description: 'Whether the device is connected to the MQTT broker now (additive field)' }),
    last_connected_at: DateSchema.nullable().meta({ description: 'When the device last connected over MQTT; null if never (additive field)' }),
    last_disconnected_at: DateSchema.nullable().meta({ description: 'When the device last disconnected from MQTT; null if never (additive field)' }),
    manifest: z
      .unknown()
      .nullable()
      .meta({ description: 'The device’s last `__manifest` over MQTT ({"jobs": […], "conditions": […]}); null if none (additive field)' }),
    last_seen_at: DateSchema.nullable().meta({
      description: 'Arrival of the device’s newest data point, kept to within 60 s (written at most once a minute); null if it never sent one (additive field)',
    }),
    firmware_version: z
      .string()
      .nullable()
      .meta({ description: 'The firmware version the device’s last FOTA ended `done` with; null if none is known (additive field)' }),
    tags: TagsSchema,
  })
  .meta({ id: 'Device' });
export type Device = z.infer<typeof DeviceSchema>;

export const DevicePathSchema = z.strictObject({ workspaceId: WorkspaceIdRefSchema, deviceId: DeviceIdRefSchema });

export const CreateDeviceBodySchema = z
  .strictObject({ name: NameSchema, fleet_id: FleetIdRefSchema.optional(), phys_id: PhysIdSchema.default(''), tags: TagsSchema.optional() })
  .meta({ id: 'CreateDevice' });
export type CreateDeviceBody = z.infer<typeof CreateDeviceBodySchema>;

export const UpdateDeviceBodySchema = z
  .strictObject({
    name: NameSchema,
    fleet_id: FleetIdRefSchema,
    phys_id: PhysIdSchema.optional(),
    tags: TagsSchema.optional().meta({ description: 'Replaces all the device’s tags; omitted: unchanged (additive field)' }),
  })
  .meta({ id: 'UpdateDevice' });
export type UpdateDeviceBody = z.infer<typeof UpdateDeviceBodySchema>;

/** PATCH (an addition to v3): each field optional; tags merged (null removes one). */
export const PatchDeviceBodySchema = z
  .strictObject({ name: NameSchema.optional(), fleet_id: FleetIdRefSchema.optional(), tags: TagChangesSchema.optional() })
  .meta({ id: 'PatchDevice' });
export type PatchDeviceBody = z.infer<typeof PatchDeviceBodySchema>;

export const DeviceResponseSchema = z.object({ device: DeviceSchema });
export const DeviceListResponseSchema = z.object({ devices: z.array(DeviceSchema), next: NextSchema });
