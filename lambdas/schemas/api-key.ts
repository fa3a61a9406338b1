import * as z from 'zod';
import { NextSchema } from './list';
import { ApiKeyIdRefSchema, ApiKeyIdSchema, DateSchema, NameSchema, WorkspaceIdRefSchema, WorkspaceIdSchema } from './common';

export const ApiKeySchema = z
  .object({
    id: ApiKeyIdSchema,
    name: z.string(),
    workspace_id: WorkspaceIdSchema,
    created_at: DateSchema,
    expires_at: DateSchema.nullable(),
    revoked_at: DateSchema.nullable(),
  })
  .meta({ id: 'ApiKey' });
export type ApiKey = z.infer<typeof ApiKeySchema>;

export const ApiKeyPathSchema = z.strictObject({ workspaceId: WorkspaceIdRefSchema, keyId: ApiKeyIdRefSchema });

export const CreateApiKeyBodySchema = z
  .strictObject({
    name: NameSchema,
    expires_at: DateSchema.optional()
      .refine((d) => d === undefined || Date.parse(d) > Date.now(), 'Must be in the future.')
      .meta({ description: 'RFC 3339 date (UTC), in the future; none: the key never expires' }),
  })
  .meta({ id: 'CreateApiKey' });
export type CreateApiKeyBody = z.infer<typeof CreateApiKeyBodySchema>;

export const ApiKeyResponseSchema = z.object({ api_key: ApiKeySchema });
export const CreatedApiKeyResponseSchema = z
  .object({ api_key: ApiKeySchema, key: z.string().meta({ description: 'The secret, shown only in this answer' }) })
  .meta({ id: 'CreatedApiKey' });
export const ApiKeyListResponseSchema = z.object({ api_keys: z.array(ApiKeySchema), next: NextSchema });
