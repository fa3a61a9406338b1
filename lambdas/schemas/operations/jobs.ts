import * as z from 'zod';
import {
  DeviceJobPathSchema,
  DeviceJobsPathSchema,
  FleetJobPathSchema,
  JobListResponseSchema,
  JobResponseSchema,
  ListJobsQuerySchema,
  ScheduleFleetJobBodySchema,
  ScheduleJobBodySchema,
} from '../job';
import { DryRunSchema, FleetSchedulingQuerySchema, GROUP_GONE } from '../dry-run';
import { ROLLOUTS_PER_DAY, type Operations } from '../operation';

const scheduleFleetJob = {
  path: FleetJobPathSchema,
  query: FleetSchedulingQuerySchema,
  body: ScheduleFleetJobBodySchema,
  // `dry_run=true` answers the count instead (DryRun), having written nothing.
  response: z.union([JobResponseSchema, DryRunSchema]),
  conflict: GROUP_GONE,
  quota: ROLLOUTS_PER_DAY,
};

/** The `jobs` handler's operations. */
export const JOB_OPERATIONS = {
  listJobs: { path: DeviceJobsPathSchema, query: ListJobsQuerySchema, response: JobListResponseSchema },
  getJob: { path: DeviceJobPathSchema, response: JobResponseSchema },
  scheduleJob: { path: DeviceJobPathSchema, body: ScheduleJobBodySchema, response: JobResponseSchema },
  cancelJob: { path: DeviceJobPathSchema, response: JobResponseSchema, conflict: 'The job already ended (done, failed, timed_out or canceled)' },
  scheduleFleetJob,
  scheduleFleetJobSingular: scheduleFleetJob,
} satisfies Operations;
