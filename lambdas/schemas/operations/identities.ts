import { DevicePathSchema } from '../device';
import { CreatedIdentityResponseSchema, CreateIdentityBodySchema, IdentityListResponseSchema, IdentityPathSchema, IdentityResponseSchema } from '../identity';
import { PageQuerySchema } from '../list';
import type { Operations } from '../operation';

/** The `identities` handler's operations. */
export const IDENTITY_OPERATIONS = {
  listIdentities: { path: DevicePathSchema, query: PageQuerySchema, response: IdentityListResponseSchema },
  createIdentity: {
    path: DevicePathSchema,
    body: CreateIdentityBodySchema,
    response: CreatedIdentityResponseSchema,
    quota: 'The workspace holds its limit of device identities that are not revoked (limits.identities)',
  },
  revokeIdentity: { path: IdentityPathSchema, response: IdentityResponseSchema },
} satisfies Operations;
