import { apiRequestHooks } from '../../domain/limits/api-requests';
import { createApiKey, listApiKeys, revokeApiKey } from '../../domain/tenancy/api-keys';
import { API_KEY_OPERATIONS } from '../../schemas/operations/api-keys';
import { registryDb } from '../../shared/clients';
import { callerOf, ok } from '../../shared/http';
import { streamList } from '../../shared/json-stream';
import { httpHandler } from '../../shared/middleware';

export const handler = httpHandler(
  'api-keys',
  API_KEY_OPERATIONS,
  {
    listApiKeys: async ({ path, query }, event) => streamList(event, 'api_keys', await listApiKeys(registryDb(), callerOf(event), path.workspaceId, query)),
    createApiKey: async ({ path, body }, event) => ok(200, await createApiKey(registryDb(), callerOf(event), path.workspaceId, body)),
    revokeApiKey: async ({ path }, event) => ok(200, { api_key: await revokeApiKey(registryDb(), callerOf(event), path.workspaceId, path.keyId) }),
  },
  apiRequestHooks(registryDb()),
);
