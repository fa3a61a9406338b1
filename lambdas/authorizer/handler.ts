import { authenticateApiKey } from '../domain/api-keys';
import { requestAuthorizer } from '../shared/authorizer';
import { registryDb } from '../shared/clients';

/**
 * API Gateway REQUEST authorizer of the management and storage API: X-API-KEY → the key's account,
 * bound workspace and key ID. An unknown, revoked or expired key is answered 401.
 */
export const handler = requestAuthorizer({
  header: 'x-api-key',
  allow: '/*/*',
  authenticate: (key) => authenticateApiKey(registryDb(), key),
  principalOf: (caller) => caller.accountId,
});
