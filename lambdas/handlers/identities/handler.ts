import { apiRequestHooks } from '../../domain/limits/api-requests';
import { createIdentity, listIdentities, revokeIdentity } from '../../domain/registry/identities';
import { IDENTITY_OPERATIONS } from '../../schemas/operations/identities';
import { registryDb } from '../../shared/clients';
import { callerOf, ok } from '../../shared/http';
import { streamList } from '../../shared/json-stream';
import { httpHandler } from '../../shared/middleware';

export const handler = httpHandler(
  'identities',
  IDENTITY_OPERATIONS,
  {
    listIdentities: async ({ path, query }, event) =>
      streamList(event, 'identities', await listIdentities(registryDb(), callerOf(event), path.workspaceId, path.deviceId, query)),
    createIdentity: async ({ path, body }, event) => ok(200, await createIdentity(registryDb(), callerOf(event), path.workspaceId, path.deviceId, body)),
    revokeIdentity: async ({ path }, event) =>
      ok(200, { identity: await revokeIdentity(registryDb(), callerOf(event), path.workspaceId, path.deviceId, path.identityId) }),
  },
  apiRequestHooks(registryDb()),
);
