import { alarmDeps } from '../../domain/alarms/alarms';
import { listConditions } from '../../domain/alarms/conditions';
import { closeAlarmsOfDevice } from '../../domain/alarms/deleted-devices';
import { purgeDataHook } from '../../domain/data/purge';
import { apiRequestHooks } from '../../domain/limits/api-requests';
import { deleteDevice } from '../../domain/registry/device-deletion';
import { listDeviceEvents } from '../../domain/registry/device-events';
import { createDevice, getDevice, listDevices, patchDevice, updateDevice } from '../../domain/registry/devices';
import { getOverview } from '../../domain/registry/overview';
import { DEVICE_OPERATIONS } from '../../schemas/operations/devices';
import { registryDb } from '../../shared/clients';
import { callerOf, ok } from '../../shared/http';
import { streamList } from '../../shared/json-stream';
import { httpHandler } from '../../shared/middleware';

export const handler = httpHandler(
  'devices',
  DEVICE_OPERATIONS,
  {
    listDevices: async ({ path, query }, event) => streamList(event, 'devices', await listDevices(registryDb(), callerOf(event), path.workspaceId, query)),
    getDevice: async ({ path }, event) => ok(200, { device: await getDevice(registryDb(), callerOf(event), path.workspaceId, path.deviceId) }),
    createDevice: async ({ path, body }, event) => ok(200, { device: await createDevice(registryDb(), callerOf(event), path.workspaceId, body) }),
    updateDevice: async ({ path, body }, event) =>
      ok(200, { device: await updateDevice(registryDb(), callerOf(event), path.workspaceId, path.deviceId, body) }),
    patchDevice: async ({ path, body }, event) => ok(200, { device: await patchDevice(registryDb(), callerOf(event), path.workspaceId, path.deviceId, body) }),
    deleteDevice: async ({ path, query }, event) =>
      ok(200, {
        device: await deleteDevice(registryDb(), callerOf(event), path.workspaceId, path.deviceId, {
          closeAlarms: (workspaceId, deviceId) => closeAlarmsOfDevice(alarmDeps(registryDb()), workspaceId, deviceId),
          ...(query.purge ? { purgeData: purgeDataHook() } : {}),
        }),
      }),
    listDeviceEvents: async ({ path, query }, event) => ok(200, await listDeviceEvents(registryDb(), callerOf(event), path.workspaceId, path.deviceId, query)),
    listConditions: async ({ path, query }, event) =>
      streamList(event, 'conditions', await listConditions(registryDb(), callerOf(event), path.workspaceId, query)),
    getOverview: async ({ path, query }, event) =>
      ok(200, { overview: await getOverview(registryDb(), callerOf(event), path.workspaceId, { silentAfterSeconds: query.silent_after }) }),
  },
  apiRequestHooks(registryDb()),
);
