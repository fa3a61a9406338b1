import { enqueueIngest, getDeviceStatus, publishData, reportEvents, reportFotaResult, reportJobResult, type DeviceApiDeps } from '../domain/device-api';
import { publishForward } from '../domain/events';
import {
  DataPointBatchSchema,
  DataPointInputSchema,
  DeviceEventBatchSchema,
  DeviceEventInputSchema,
  DeviceJobResultPathSchema,
  FotaResultBodySchema,
  JobResultBodySchema,
} from '../schemas/device-api';
import { registryDb } from '../shared/clients';
import { ok, parseBody, parsePath, type ApiEvent } from '../shared/http';
import { httpHandler } from '../shared/middleware';
import { deviceCallerOf } from './device-caller';

const deps: DeviceApiDeps = { db: registryDb(), enqueue: enqueueIngest, forward: publishForward };

// The publish and event routes take one item or an array of them; each is parsed by its own
// schema so that errors name the bad field (`body.3.tag`).
const publishDataRoute = async (event: ApiEvent) => {
  const points = Array.isArray(event.body) ? parseBody(DataPointBatchSchema, event) : [parseBody(DataPointInputSchema, event)];
  return ok(202, await publishData(deps, deviceCallerOf(event), points));
};

const reportDeviceEventsRoute = async (event: ApiEvent) => {
  const events = Array.isArray(event.body) ? parseBody(DeviceEventBatchSchema, event) : [parseBody(DeviceEventInputSchema, event)];
  return ok(202, await reportEvents(deps, deviceCallerOf(event), events));
};

const getDeviceStatusRoute = async (event: ApiEvent) => ok(200, await getDeviceStatus(deps, deviceCallerOf(event)));

const reportJobResultRoute = async (event: ApiEvent) => {
  const { jobName } = parsePath(DeviceJobResultPathSchema, event);
  const { result } = parseBody(JobResultBodySchema, event);
  return ok(200, { job: await reportJobResult(deps, deviceCallerOf(event), jobName, result) });
};

const reportFotaResultRoute = async (event: ApiEvent) => {
  const outcome = parseBody(FotaResultBodySchema, event);
  return ok(200, { fota: await reportFotaResult(deps, deviceCallerOf(event), outcome) });
};

export const handler = httpHandler('device-api', {
  publishData: publishDataRoute,
  reportDeviceEvents: reportDeviceEventsRoute,
  getDeviceStatus: getDeviceStatusRoute,
  reportJobResult: reportJobResultRoute,
  reportFotaResult: reportFotaResultRoute,
});
