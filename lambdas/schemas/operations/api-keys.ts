import { ApiKeyListResponseSchema, ApiKeyPathSchema, ApiKeyResponseSchema, CreateApiKeyBodySchema, CreatedApiKeyResponseSchema } from '../api-key';
import { PageQuerySchema } from '../list';
import type { Operations } from '../operation';
import { WorkspacePathSchema } from '../workspace';

/** The `api-keys` handler's operations. */
export const API_KEY_OPERATIONS = {
  listApiKeys: { path: WorkspacePathSchema, query: PageQuerySchema, response: ApiKeyListResponseSchema },
  createApiKey: {
    path: WorkspacePathSchema,
    body: CreateApiKeyBodySchema,
    response: CreatedApiKeyResponseSchema,
    quota: 'The workspace holds its limit of API keys that are not revoked (limits.api_keys)',
  },
  revokeApiKey: { path: ApiKeyPathSchema, response: ApiKeyResponseSchema },
} satisfies Operations;
