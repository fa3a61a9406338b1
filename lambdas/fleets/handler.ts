import { createFleet, getFleet, listFleets } from '../domain/fleets';
import { CreateFleetBodySchema, FleetPathSchema } from '../schemas/fleet';
import { WorkspacePathSchema } from '../schemas/workspace';
import { registryDb } from '../shared/clients';
import { callerOf, ok, parseBody, parsePath, type ApiEvent } from '../shared/http';
import { httpHandler } from '../shared/middleware';

const listFleetsRoute = async (event: ApiEvent) => {
  const { workspaceId } = parsePath(WorkspacePathSchema, event);
  return ok(200, { fleets: await listFleets(registryDb(), callerOf(event), workspaceId) });
};

const getFleetRoute = async (event: ApiEvent) => {
  const { workspaceId, fleetId } = parsePath(FleetPathSchema, event);
  return ok(200, { fleet: await getFleet(registryDb(), callerOf(event), workspaceId, fleetId) });
};

const createFleetRoute = async (event: ApiEvent) => {
  const { workspaceId } = parsePath(WorkspacePathSchema, event);
  const body = parseBody(CreateFleetBodySchema, event);
  return ok(200, { fleet: await createFleet(registryDb(), callerOf(event), workspaceId, body) });
};

export const handler = httpHandler('fleets', {
  listFleets: listFleetsRoute,
  getFleet: getFleetRoute,
  createFleet: createFleetRoute,
});
