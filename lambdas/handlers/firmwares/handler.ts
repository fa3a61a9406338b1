import { apiRequestHooks } from '../../domain/limits/api-requests';
import { deleteFirmware, getFirmware, listFirmwares, registerFirmware } from '../../domain/fleet-ops/firmware';
import { FIRMWARE_OPERATIONS } from '../../schemas/operations/firmwares';
import { registryDb } from '../../shared/clients';
import { callerOf, ok } from '../../shared/http';
import { streamList } from '../../shared/json-stream';
import { httpHandler } from '../../shared/middleware';

export const handler = httpHandler(
  'firmwares',
  FIRMWARE_OPERATIONS,
  {
    listFirmwares: async ({ path, query }, event) =>
      streamList(event, 'firmwares', await listFirmwares(registryDb(), callerOf(event), path.workspaceId, query)),
    registerFirmware: async ({ path: { workspaceId, firmwareId, firmwareVersion }, body }, event) =>
      ok(201, { firmware: await registerFirmware(registryDb(), callerOf(event), workspaceId, firmwareId, firmwareVersion, body) }),
    getFirmware: async ({ path: { workspaceId, firmwareId, firmwareVersion } }, event) =>
      ok(200, { firmware: await getFirmware(registryDb(), callerOf(event), workspaceId, firmwareId, firmwareVersion) }),
    deleteFirmware: async ({ path: { workspaceId, firmwareId, firmwareVersion } }, event) =>
      ok(200, { firmware: await deleteFirmware(registryDb(), callerOf(event), workspaceId, firmwareId, firmwareVersion) }),
  },
  apiRequestHooks(registryDb()),
);
