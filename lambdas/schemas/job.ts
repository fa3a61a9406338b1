import * as z from 'zod';
import { NextSchema, PageQueryShape } from './list';
import { JSON_MAX_DEPTH } from '../shared/json';
import { DateSchema, DeviceIdRefSchema, DeviceIdSchema, FleetIdRefSchema, JsonObjectSchema, PathTokenSchema, WorkspaceIdRefSchema } from './common';

/** Largest job value, as serialized JSON; well below DynamoDB's 400 KB item limit. */
export const JOB_VALUE_MAX_BYTES = 32 * 1024;

export const JOB_STATUSES = ['pending', 'done'] as const;
export const JobStatusSchema = z.enum(JOB_STATUSES);
export type JobStatus = z.infer<typeof JobStatusSchema>;

export const JobSchema = z
  .object({
    name: z.string(),
    status: JobStatusSchema,
    scheduled_at: DateSchema,
    value: JsonObjectSchema,
    result: JsonObjectSchema.optional().meta({ description: 'Only when done: what the device reported' }),
    completed_at: DateSchema.optional().meta({ description: 'Only when done: when the device reported its result' }),
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

export const ScheduleJobBodySchema = z.strictObject({ value: JobObjectSchema }).meta({ id: 'ScheduleJob' });

export const JobResponseSchema = z.object({ job: JobSchema });
export const JobListResponseSchema = z.object({ jobs: z.array(JobSchema), next: NextSchema });
