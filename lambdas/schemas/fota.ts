import * as z from 'zod';
import { DateSchema, DescriptionSchema, DeviceIdRefSchema, DeviceIdSchema, PathTokenSchema, RolloutIdSchema, WorkspaceIdRefSchema } from './common';
import { JobStatusSchema } from './job';
import { RolloutSettingsInputSchema, TimeoutSecondsSchema } from './rollout-settings';

export const FotaSchema = z
  .object({
    scheduled_at: DateSchema,
    status: JobStatusSchema.meta({ description: 'pending when scheduled (queued while its rollout has not released it); see the states of operations.md §1' }),
    value: z.object({ firmware_id: z.string(), firmware_version: z.string() }),
    message: DescriptionSchema.optional().meta({ description: 'Only when the device gave one: its last progress or outcome message' }),
    completed_at: DateSchema.optional().meta({ description: 'Only when ended (done, failed, timed_out, canceled): when it ended' }),
    rollout_id: RolloutIdSchema.optional().meta({ description: 'Only when scheduled on fleets: the rollout that records that scheduling' }),
    timeout_seconds: TimeoutSecondsSchema.optional().meta({ description: 'Only when scheduled with one: the timeout after its release' }),
    devices: z.array(DeviceIdSchema).optional().meta({ description: 'Only when scheduled on fleets' }),
  })
  .meta({ id: 'Fota' });
export type Fota = z.infer<typeof FotaSchema>;

export const DeviceFotaPathSchema = z.strictObject({ deviceId: DeviceIdRefSchema });
export const ScheduleFotaPathSchema = z.strictObject({ deviceId: DeviceIdRefSchema, firmwareId: PathTokenSchema, firmwareVersion: PathTokenSchema });
export const ScheduleFleetFotaPathSchema = z.strictObject({ workspaceId: WorkspaceIdRefSchema, firmwareId: PathTokenSchema, firmwareVersion: PathTokenSchema });

/** The optional body of a FOTA on one device (v3 sends none). */
export const ScheduleFotaBodySchema = z.strictObject({ timeout_seconds: TimeoutSecondsSchema.optional() }).meta({ id: 'ScheduleFota' });

/** The optional body of a fleet-wide FOTA (v3 sends none): the settings of the rollout it creates. */
export const ScheduleFleetFotaBodySchema = z.strictObject({ rollout: RolloutSettingsInputSchema.optional() }).meta({ id: 'ScheduleFleetFota' });

export const FotaResponseSchema = z.object({ fota: FotaSchema });
