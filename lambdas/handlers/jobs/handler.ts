import { apiRequestHooks } from '../../domain/limits/api-requests';
import { cancelJob, dryRunFleetJob, getJob, listJobs, scheduleFleetJob, scheduleJob } from '../../domain/fleet-ops/jobs';
import { JOB_OPERATIONS } from '../../schemas/operations/jobs';
import { registryDb } from '../../shared/clients';
import { callerOf, ok, type ApiEvent } from '../../shared/http';
import { streamList } from '../../shared/json-stream';
import { httpHandler, type RouteInput } from '../../shared/middleware';
import { streamJsonWithList } from '../../shared/json-stream';

// Served at both /workspace/… (the reference's heading) and /workspaces/… (its worked example).
const scheduleFleetJobRoute = async ({ path, query, body }: RouteInput<typeof JOB_OPERATIONS.scheduleFleetJob>, event: ApiEvent) => {
  const target = { groupId: query.group, q: query.q };
  if (query.dry_run) return ok(200, await dryRunFleetJob(registryDb(), callerOf(event), path.workspaceId, query.fleet, target));
  const { job, devices } = await scheduleFleetJob(registryDb(), callerOf(event), path.workspaceId, path.jobName, body.value, query.fleet, body.rollout, target);
  return streamJsonWithList(event, 'job', job, 'devices', devices);
};

export const handler = httpHandler(
  'jobs',
  JOB_OPERATIONS,
  {
    listJobs: async ({ path, query }, event) => streamList(event, 'jobs', await listJobs(registryDb(), callerOf(event), path.deviceId, query.status, query)),
    getJob: async ({ path }, event) => ok(200, { job: await getJob(registryDb(), callerOf(event), path.deviceId, path.jobName) }),
    scheduleJob: async ({ path, body }, event) =>
      ok(200, { job: await scheduleJob(registryDb(), callerOf(event), path.deviceId, path.jobName, body.value, body.timeout_seconds) }),
    cancelJob: async ({ path }, event) => ok(200, { job: await cancelJob(registryDb(), callerOf(event), path.deviceId, path.jobName) }),
    scheduleFleetJob: scheduleFleetJobRoute,
    scheduleFleetJobSingular: scheduleFleetJobRoute,
  },
  apiRequestHooks(registryDb()),
);
