import { getFota, scheduleFleetFota, scheduleFota } from '../domain/fota';
import { DeviceFotaPathSchema, ScheduleFleetFotaPathSchema, ScheduleFotaPathSchema } from '../schemas/fota';
import { FleetsQuerySchema } from '../schemas/job';
import { registryDb } from '../shared/clients';
import { callerOf, ok, parsePath, parseQuery, type ApiEvent } from '../shared/http';
import { httpHandler } from '../shared/middleware';

const getFotaRoute = async (event: ApiEvent) => {
  const { deviceId } = parsePath(DeviceFotaPathSchema, event);
  return ok(200, { fota: await getFota(registryDb(), callerOf(event), deviceId) });
};

const scheduleFotaRoute = async (event: ApiEvent) => {
  const { deviceId, ...firmware } = parsePath(ScheduleFotaPathSchema, event);
  return ok(200, { fota: await scheduleFota(registryDb(), callerOf(event), deviceId, firmware) });
};

const scheduleFleetFotaRoute = async (event: ApiEvent) => {
  const { workspaceId, ...firmware } = parsePath(ScheduleFleetFotaPathSchema, event);
  const { fleet } = parseQuery(FleetsQuerySchema, event, ['fleet']);
  return ok(200, { fota: await scheduleFleetFota(registryDb(), callerOf(event), workspaceId, firmware, fleet) });
};

export const handler = httpHandler('fota', {
  getFota: getFotaRoute,
  scheduleFota: scheduleFotaRoute,
  scheduleFleetFota: scheduleFleetFotaRoute,
});
