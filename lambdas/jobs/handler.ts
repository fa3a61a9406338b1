import { getJob, listJobs, scheduleFleetJob, scheduleJob } from '../domain/jobs';
import {
  DeviceJobPathSchema,
  DeviceJobsPathSchema,
  FleetJobPathSchema,
  FleetsQuerySchema,
  ListJobsQuerySchema,
  ScheduleJobBodySchema,
} from '../schemas/job';
import { registryDb } from '../shared/clients';
import { callerOf, ok, parseBody, parsePath, parseQuery, type ApiEvent } from '../shared/http';
import { httpHandler } from '../shared/middleware';

const listJobsRoute = async (event: ApiEvent) => {
  const { deviceId } = parsePath(DeviceJobsPathSchema, event);
  const { status } = parseQuery(ListJobsQuerySchema, event);
  return ok(200, { jobs: await listJobs(registryDb(), callerOf(event), deviceId, status) });
};

const getJobRoute = async (event: ApiEvent) => {
  const { deviceId, jobName } = parsePath(DeviceJobPathSchema, event);
  return ok(200, { job: await getJob(registryDb(), callerOf(event), deviceId, jobName) });
};

const scheduleJobRoute = async (event: ApiEvent) => {
  const { deviceId, jobName } = parsePath(DeviceJobPathSchema, event);
  const { value } = parseBody(ScheduleJobBodySchema, event);
  return ok(200, { job: await scheduleJob(registryDb(), callerOf(event), deviceId, jobName, value) });
};

// Served at both /workspace/… (the reference's heading) and /workspaces/… (its worked example).
const scheduleFleetJobRoute = async (event: ApiEvent) => {
  const { workspaceId, jobName } = parsePath(FleetJobPathSchema, event);
  const { fleet } = parseQuery(FleetsQuerySchema, event, ['fleet']);
  const { value } = parseBody(ScheduleJobBodySchema, event);
  return ok(200, { job: await scheduleFleetJob(registryDb(), callerOf(event), workspaceId, jobName, value, fleet) });
};

export const handler = httpHandler('jobs', {
  listJobs: listJobsRoute,
  getJob: getJobRoute,
  scheduleJob: scheduleJobRoute,
  scheduleFleetJob: scheduleFleetJobRoute,
  scheduleFleetJobSingular: scheduleFleetJobRoute,
});
