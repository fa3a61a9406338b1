import { checkApiKey } from '../../domain/tenancy/api-keys';
import { authenticateUser } from '../../domain/tenancy/users';
import { requestAuthorizer } from '../../shared/authorizer';
import { registryDb } from '../../shared/clients';
import { authorizerCacheTtlSeconds, userPoolSettings } from '../../shared/env';
import { UnauthorizedError } from '../../shared/errors';
import { verifyAccessToken } from '../../shared/session-tokens';

const expiries = new WeakMap<object, number>();

/**
 * API Gateway REQUEST authorizer of the management and storage API. An `X-API-KEY` → the key's
 * account, bound workspace and key ID; otherwise `Authorization: Bearer <Cognito access token>` (a
 * console session) → the user's account, with no bound workspace. A request carrying both is
 * judged by its API key. Anything else is answered 401. An accepted answer is reused by this
 * container for AUTHORIZER_CACHE_TTL_SECONDS, never past the key's `expires_at` or the session's
 * `exp`: a revoked key keeps working here for up to that TTL, but cannot create keys or identities.
 */
export const handler = requestAuthorizer({
  header: 'x-api-key',
  allow: '/*/*',
  authenticate: async (key, headers) => {
    if (key) {
      const { caller, expiresAt } = await checkApiKey(registryDb(), key);
      if (expiresAt !== undefined) expiries.set(caller, expiresAt);
      return caller;
    }
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(headers('authorization') ?? '')?.[1];
    if (!bearer) throw new UnauthorizedError('An X-API-KEY header or a session (Authorization: Bearer <access token>) is required.');
    const claims = await verifyAccessToken(bearer, userPoolSettings());
    const caller = await authenticateUser(registryDb(), claims.sub);
    if (claims.exp) expiries.set(caller, claims.exp * 1000);
    return caller;
  },
  principalOf: (caller) => caller.accountId,
  cacheTtlSeconds: authorizerCacheTtlSeconds,
  // An answer is never reused past its key's expires_at, or its session token's exp.
  expiresAt: (caller) => expiries.get(caller),
});
