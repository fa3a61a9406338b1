import {
  DeviceJobPathSchema,
  DeviceJobsPathSchema,
  FleetJobPathSchema,
  FleetsQuerySchema,
  JobListResponseSchema,
  JobResponseSchema,
  ListJobsQuerySchema,
  ScheduleJobBodySchema,
} from '../job';
import type { Operations } from '../operation';

const scheduleFleetJob = { path: FleetJobPathSchema, query: FleetsQuerySchema, body: ScheduleJobBodySchema, response: JobResponseSchema };

/** The `jobs` handler's operations. */
export const JOB_OPERATIONS = {
  listJobs: { path: DeviceJobsPathSchema, query: ListJobsQuerySchema, response: JobListResponseSchema },
  getJob: { path: DeviceJobPathSchema, response: JobResponseSchema },
  scheduleJob: { path: DeviceJobPathSchema, body: ScheduleJobBodySchema, response: JobResponseSchema },
  scheduleFleetJob,
  scheduleFleetJobSingular: scheduleFleetJob,
} satisfies Operations;
