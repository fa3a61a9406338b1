import { apiRequestHooks } from '../domain/api-requests';
import { getFota, scheduleFleetFota, scheduleFota } from '../domain/fota';
import { FOTA_OPERATIONS } from '../schemas/operations/fota';
import { registryDb } from '../shared/clients';
import { callerOf, ok } from '../shared/http';
import { httpHandler } from '../shared/middleware';
import { streamJsonWithList } from '../shared/json-stream';

export const handler = httpHandler('fota', FOTA_OPERATIONS, {
  getFota: async ({ path }, event) => ok(200, { fota: await getFota(registryDb(), callerOf(event), path.deviceId) }),
  scheduleFota: async ({ path: { deviceId, ...firmware } }, event) => ok(200, { fota: await scheduleFota(registryDb(), callerOf(event), deviceId, firmware) }),
  scheduleFleetFota: async ({ path: { workspaceId, ...firmware }, query }, event) => {
    const { fota, devices } = await scheduleFleetFota(registryDb(), callerOf(event), workspaceId, firmware, query.fleet);
    return streamJsonWithList(event, 'fota', fota, 'devices', devices);
  },
}, apiRequestHooks(registryDb()));
