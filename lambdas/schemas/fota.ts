import * as z from 'zod';
import { DateSchema, DeviceIdRefSchema, DeviceIdSchema, PathTokenSchema, WorkspaceIdRefSchema } from './common';

export const FotaSchema = z
  .object({
    scheduled_at: DateSchema,
    status: z.string().meta({ description: 'pending when scheduled' }),
    value: z.object({ firmware_id: z.string(), firmware_version: z.string() }),
    devices: z.array(DeviceIdSchema).optional().meta({ description: 'Only when scheduled on fleets' }),
  })
  .meta({ id: 'Fota' });
export type Fota = z.infer<typeof FotaSchema>;

export const DeviceFotaPathSchema = z.strictObject({ deviceId: DeviceIdRefSchema });
export const ScheduleFotaPathSchema = z.strictObject({ deviceId: DeviceIdRefSchema, firmwareId: PathTokenSchema, firmwareVersion: PathTokenSchema });
export const ScheduleFleetFotaPathSchema = z.strictObject({ workspaceId: WorkspaceIdRefSchema, firmwareId: PathTokenSchema, firmwareVersion: PathTokenSchema });

export const FotaResponseSchema = z.object({ fota: FotaSchema });
