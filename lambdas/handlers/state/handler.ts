import { apiRequestHooks } from '../../domain/limits/api-requests';
import { patchDeviceState, readDeviceState } from '../../domain/state/device-state';
import { STATE_OPERATIONS } from '../../schemas/operations/state';
import { registryDb } from '../../shared/clients';
import { callerOf, ok } from '../../shared/http';
import { httpHandler } from '../../shared/middleware';

export const handler = httpHandler(
  'state',
  STATE_OPERATIONS,
  {
    getDeviceState: async ({ path }, event) => ok(200, { state: await readDeviceState(registryDb(), callerOf(event), path.workspaceId, path.deviceId) }),
    patchDeviceState: async ({ path, body }, event) =>
      ok(200, { state: await patchDeviceState(registryDb(), callerOf(event), path.workspaceId, path.deviceId, body) }),
  },
  apiRequestHooks(registryDb()),
);
