import * as z from 'zod';
import {
  DateSchema,
  DescriptionSchema,
  DeviceIdSchema,
  FleetIdSchema,
  JsonObjectSchema,
  RolloutIdRefSchema,
  RolloutIdSchema,
  WorkspaceIdRefSchema,
  WorkspaceIdSchema,
} from './common';
import { JOB_STATUSES, JobStatusSchema } from './job';
import { NextSchema, PageQueryShape } from './list';
import { RolloutAbortRuleSchema, RolloutSettingsSchema } from './rollout-settings';

/**
 * A rollout's own states: `in_progress` (releasing, or waiting for its devices), `paused` (no more
 * releases), and the ended ones: `completed` (nothing queued, pending or in progress), `canceled`
 * (by a user), `aborted` (by its abort rule).
 */
export const ROLLOUT_STATUSES = ['in_progress', 'paused', 'completed', 'canceled', 'aborted'] as const;
export const RolloutStatusSchema = z.enum(ROLLOUT_STATUSES);
export type RolloutStatus = z.infer<typeof RolloutStatusSchema>;

/** How many of a rollout's devices are in each state: they always add up to `total`. */
export const RolloutCountsSchema = z
  .object(Object.fromEntries(JOB_STATUSES.map((s) => [s, z.number().int().min(0)])) as Record<(typeof JOB_STATUSES)[number], z.ZodNumber>)
  .meta({ id: 'RolloutCounts' });
export type RolloutCounts = z.infer<typeof RolloutCountsSchema>;

/**
 * Why an aborted rollout aborted: its abort rule, and the counts it saw when it fired (the counts
 * move on after it: its queued and pending devices are then canceled, and devices in progress end).
 */
export const RolloutAbortReasonSchema = z
  .object({
    // The abort rule that fired (the rollout's settings.abort).
    rule: RolloutAbortRuleSchema,
    finished: z.number().int().min(0).meta({ description: 'Devices ended as done, failed or timed_out when it fired' }),
    failed: z.number().int().min(0).meta({ description: 'Of them, failed' }),
    timed_out: z.number().int().min(0).meta({ description: 'Of them, timed_out' }),
    failure_percentage: z.number().min(0).max(100).meta({ description: '(failed + timed_out) / finished, in %, rounded to two decimals' }),
    message: z.string().meta({ description: 'The same in words, for people' }),
    at: DateSchema.meta({ description: 'When it aborted' }),
  })
  .meta({ id: 'RolloutAbortReason' });
export type RolloutAbortReason = z.infer<typeof RolloutAbortReasonSchema>;

export const RolloutSchema = z
  .object({
    id: RolloutIdSchema,
    workspace_id: WorkspaceIdSchema,
    kind: z.enum(['job', 'fota', 'state']).meta({ description: 'job, fota, or state: a fleet-wide desired state (PATCH /workspaces/{workspaceId}/state)' }),
    job_name: z.string().optional().meta({ description: 'Jobs only' }),
    value: JsonObjectSchema.optional().meta({ description: 'Jobs only: the value every device got' }),
    desired: JsonObjectSchema.optional().meta({
      description: 'State only: the desired keys it sets on each device (null: removed); a device is done once it reports them (additive field)',
    }),
    firmware_id: z.string().optional().meta({ description: 'FOTA only' }),
    firmware_version: z.string().optional().meta({ description: 'FOTA only' }),
    fleets: z.array(FleetIdSchema).meta({ description: 'The fleets named when scheduling; empty: every fleet of the workspace' }),
    group_id: z.string().nullable().optional().meta({ description: 'The group it targets (group=), or null: none (additive field)' }),
    q: z.string().nullable().optional().meta({ description: 'The query it targets (q=), as given, or null: none (additive field)' }),
    created_at: DateSchema,
    updated_at: DateSchema.meta({ description: 'Its last change, counts included' }),
    status: RolloutStatusSchema,
    settings: RolloutSettingsSchema,
    total: z
      .number()
      .int()
      .min(0)
      .meta({ description: 'Devices counted so far: it reaches the number of devices scheduled within seconds of the scheduling’s answer' }),
    counts: RolloutCountsSchema,
    next_release_at: DateSchema.nullable().meta({
      description:
        'Rate-limited and releasing (in progress, devices may still be queued): when its next minute’s devices are released (the sweep releases them within seconds after; a time past means at its next run); null otherwise (additive field)',
    }),
    abort_reason: RolloutAbortReasonSchema.nullable().meta({
      description: 'Aborted: why (the rule and the counts it saw); null otherwise, and for rollouts aborted before reasons were recorded (additive field)',
    }),
  })
  .meta({ id: 'Rollout' });
export type Rollout = z.infer<typeof RolloutSchema>;

/** One device of a rollout, as the devices list shows it. */
export const RolloutDeviceSchema = z
  .object({
    device_id: DeviceIdSchema,
    device_name: z.string().optional().meta({ description: 'The device’s name now (absent if the device no longer exists) (additive field)' }),
    status: JobStatusSchema,
    updated_at: DateSchema.meta({ description: 'When it reached this state' }),
    result: JsonObjectSchema.optional().meta({ description: 'Jobs, when done or failed: what the device reported' }),
    message: DescriptionSchema.optional().meta({ description: 'FOTA, when the device gave one: its last progress or outcome message' }),
  })
  .meta({ id: 'RolloutDevice' });
export type RolloutDevice = z.infer<typeof RolloutDeviceSchema>;

export const RolloutsPathSchema = z.strictObject({ workspaceId: WorkspaceIdRefSchema });
export const RolloutPathSchema = z.strictObject({ workspaceId: WorkspaceIdRefSchema, rolloutId: RolloutIdRefSchema });
export const ListRolloutDevicesQuerySchema = z.strictObject({
  status: z.array(JobStatusSchema).max(JOB_STATUSES.length, `At most ${JOB_STATUSES.length} states.`).optional().meta({
    description:
      'Repeatable (?status=failed&status=timed_out): only the devices in these states, state by state in the order given (each an index range: as fast for 5 devices as for 100,000); none: every state',
  }),
  ...PageQueryShape,
});

export const RolloutResponseSchema = z.object({ rollout: RolloutSchema });
export const RolloutListResponseSchema = z.object({ rollouts: z.array(RolloutSchema), next: NextSchema });
export const RolloutDevicesResponseSchema = z.object({ devices: z.array(RolloutDeviceSchema), next: NextSchema });
