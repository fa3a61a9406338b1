import * as z from 'zod';
import { NextSchema, PageQueryShape } from './list';
import { JSON_MAX_DEPTH } from '../shared/json';
import {
  DateSchema,
  DeviceIdRefSchema,
  DeviceIdSchema,
  FleetIdRefSchema,
  JsonObjectSchema,
  PathTokenSchema,
  RolloutIdSchema,
  WorkspaceIdRefSchema,
} from './common';
import { RolloutSettingsInputSchema, TimeoutSecondsSchema } from './rollout-settings';

/** Largest job value, as serialized JSON; well below DynamoDB's 400 KB item limit. */
export const JOB_VALUE_MAX_BYTES = 32 * 1024;

/**
 * The states of a job or FOTA on a device (operations.md §1): `queued` (a rate-limited or paused
 * rollout has not released it: not delivered), `pending` (v3's: delivered or deliverable),
 * `in_progress` (FOTA only: the device reported progress), and the ended ones.
 */
export const JOB_STATUSES = ['queued', 'pending', 'in_progress', 'done', 'failed', 'timed_out', 'canceled'] as const;
export const JobStatusSchema = z.enum(JOB_STATUSES);
export type JobStatus = z.infer<typeof JobStatusSchema>;

/** The states a job or FOTA never leaves. */
export const ENDED_STATUSES: ReadonlySet<JobStatus> = new Set(['done', 'failed', 'timed_out', 'canceled']);
/** The states a job or FOTA may still leave (and be canceled in). */
export const OPEN_STATUSES: readonly JobStatus[] = JOB_STATUSES.filter((s) => !ENDED_STATUSES.has(s));

export const JobSchema = z
  .object({
    name: z.string(),
    status: JobStatusSchema,
    scheduled_at: DateSchema,
    value: JsonObjectSchema,
    result: JsonObjectSchema.optional().meta({
      description: 'Only when done or failed: what the device reported (failed: an object with a top-level `error`)',
    }),
    completed_at: DateSchema.optional().meta({ description: 'Only when ended (done, failed, timed_out, canceled): when it ended' }),
    rollout_id: RolloutIdSchema.optional().meta({ description: 'Only when scheduled on fleets: the rollout that records that scheduling' }),
    timeout_seconds: TimeoutSecondsSchema.optional().meta({ description: 'Only when scheduled with one: the timeout after its release' }),
    devices: z.array(DeviceIdSchema).optional().meta({ description: 'Only when scheduled on fleets' }),
  })
  .meta({ id: 'Job' });
export type Job = z.infer<typeof JobSchema>;

export const DeviceJobsPathSchema = z.strictObject({ deviceId: DeviceIdRefSchema });
export const DeviceJobPathSchema = z.strictObject({ deviceId: DeviceIdRefSchema, jobName: PathTokenSchema });
export const FleetJobPathSchema = z.strictObject({ workspaceId: WorkspaceIdRefSchema, jobName: PathTokenSchema });

export const ListJobsQuerySchema = z.strictObject({ status: JobStatusSchema.optional(), ...PageQueryShape });

/** Repeatable `fleet`: none means every fleet of the workspace (jobs and FOTA on fleets, the device list). */
export const FleetsQuerySchema = z.strictObject({
  fleet: z
    .array(FleetIdRefSchema)
    .max(100, 'At most 100 fleets.')
    .optional()
    .meta({ description: 'Repeatable (?fleet=a&fleet=b), at most 100: these fleets of the workspace; none: every fleet' }),
});

/** A job's value, or the result a device reports: a JSON object ({} when omitted) within the size cap. */
export const JobObjectSchema = JsonObjectSchema.default({})
  .refine((value) => Buffer.byteLength(JSON.stringify(value)) <= JOB_VALUE_MAX_BYTES, `Must be at most ${JOB_VALUE_MAX_BYTES} bytes as JSON.`)
  .meta({ description: `A JSON object, nested at most ${JSON_MAX_DEPTH} levels, at most ${JOB_VALUE_MAX_BYTES} bytes serialized; {} when omitted` });

export const ScheduleJobBodySchema = z.strictObject({ value: JobObjectSchema, timeout_seconds: TimeoutSecondsSchema.optional() }).meta({ id: 'ScheduleJob' });

/** A fleet-wide job: its value, and the settings of the rollout it creates (none: every device released at once, as in v3). */
export const ScheduleFleetJobBodySchema = z
  .strictObject({ value: JobObjectSchema, rollout: RolloutSettingsInputSchema.optional() })
  .meta({ id: 'ScheduleFleetJob' });

export const JobResponseSchema = z.object({ job: JobSchema });
export const JobListResponseSchema = z.object({ jobs: z.array(JobSchema), next: NextSchema });
