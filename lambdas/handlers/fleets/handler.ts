import { apiRequestHooks } from '../../domain/limits/api-requests';
import { createFleet, deleteFleet, getFleet, listFleets } from '../../domain/registry/fleets';
import { FLEET_OPERATIONS } from '../../schemas/operations/fleets';
import { registryDb } from '../../shared/clients';
import { callerOf, ok } from '../../shared/http';
import { streamList } from '../../shared/json-stream';
import { httpHandler } from '../../shared/middleware';

export const handler = httpHandler(
  'fleets',
  FLEET_OPERATIONS,
  {
    listFleets: async ({ path, query }, event) => streamList(event, 'fleets', await listFleets(registryDb(), callerOf(event), path.workspaceId, query)),
    getFleet: async ({ path }, event) => ok(200, { fleet: await getFleet(registryDb(), callerOf(event), path.workspaceId, path.fleetId) }),
    deleteFleet: async ({ path }, event) => ok(200, { fleet: await deleteFleet(registryDb(), callerOf(event), path.workspaceId, path.fleetId) }),
    createFleet: async ({ path, body }, event) => ok(200, { fleet: await createFleet(registryDb(), callerOf(event), path.workspaceId, body) }),
  },
  apiRequestHooks(registryDb()),
);
