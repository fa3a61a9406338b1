import { createIdentity, listIdentities, revokeIdentity } from '../domain/identities';
import { DevicePathSchema } from '../schemas/device';
import { CreateIdentityBodySchema, IdentityPathSchema } from '../schemas/identity';
import { registryDb } from '../shared/clients';
import { callerOf, ok, parseBody, parsePath, type ApiEvent } from '../shared/http';
import { httpHandler } from '../shared/middleware';

const listIdentitiesRoute = async (event: ApiEvent) => {
  const { workspaceId, deviceId } = parsePath(DevicePathSchema, event);
  return ok(200, { identities: await listIdentities(registryDb(), callerOf(event), workspaceId, deviceId) });
};

const createIdentityRoute = async (event: ApiEvent) => {
  const { workspaceId, deviceId } = parsePath(DevicePathSchema, event);
  const body = parseBody(CreateIdentityBodySchema, event);
  return ok(200, await createIdentity(registryDb(), callerOf(event), workspaceId, deviceId, body));
};

const revokeIdentityRoute = async (event: ApiEvent) => {
  const { workspaceId, deviceId, identityId } = parsePath(IdentityPathSchema, event);
  return ok(200, { identity: await revokeIdentity(registryDb(), callerOf(event), workspaceId, deviceId, identityId) });
};

export const handler = httpHandler('identities', {
  listIdentities: listIdentitiesRoute,
  createIdentity: createIdentityRoute,
  revokeIdentity: revokeIdentityRoute,
});
