import { createApiKey, listApiKeys, revokeApiKey } from '../domain/api-keys';
import { ApiKeyPathSchema, CreateApiKeyBodySchema } from '../schemas/api-key';
import { WorkspacePathSchema } from '../schemas/workspace';
import { registryDb } from '../shared/clients';
import { callerOf, ok, parseBody, parsePath, type ApiEvent } from '../shared/http';
import { httpHandler } from '../shared/middleware';

const listApiKeysRoute = async (event: ApiEvent) => {
  const { workspaceId } = parsePath(WorkspacePathSchema, event);
  return ok(200, { api_keys: await listApiKeys(registryDb(), callerOf(event), workspaceId) });
};

const createApiKeyRoute = async (event: ApiEvent) => {
  const { workspaceId } = parsePath(WorkspacePathSchema, event);
  const body = parseBody(CreateApiKeyBodySchema, event);
  return ok(200, await createApiKey(registryDb(), callerOf(event), workspaceId, body));
};

const revokeApiKeyRoute = async (event: ApiEvent) => {
  const { workspaceId, keyId } = parsePath(ApiKeyPathSchema, event);
  return ok(200, { api_key: await revokeApiKey(registryDb(), callerOf(event), workspaceId, keyId) });
};

export const handler = httpHandler('api-keys', {
  listApiKeys: listApiKeysRoute,
  createApiKey: createApiKeyRoute,
  revokeApiKey: revokeApiKeyRoute,
});
