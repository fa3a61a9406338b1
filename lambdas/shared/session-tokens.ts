import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';
import { UnauthorizedError } from './errors';

/** The user pool whose access tokens the API accepts. */
export interface UserPoolSettings {
  /** `iss` of its tokens: `https://cognito-idp.<region>.amazonaws.com/<pool id>` (cognito-local: `http://127.0.0.1:<port>/<pool id>`). */
  issuer: string;
  /** The console's app client: an access token names it in `client_id`. */
  clientId: string;
}

// One key set per issuer, kept for the life of the Lambda container: jose fetches the JWKS once,
// refetches it when a token names an unknown key (a rotation), and never more than every 30 s.
const keySets = new Map<string, ReturnType<typeof createRemoteJWKSet>>();
const keySetOf = (issuer: string) => {
  let keySet = keySets.get(issuer);
  if (!keySet) {
    keySet = createRemoteJWKSet(new URL(`${issuer}/.well-known/jwks.json`));
    keySets.set(issuer, keySet);
  }
  return keySet;
};

/**
 * Verifies a Cognito access token as AWS says a resource server must
 * (https://docs.aws.amazon.com/cognito/latest/developerguide/amazon-cognito-user-pools-using-tokens-verifying-a-jwt.html):
 * signature against the pool's JWKS, `exp`, `iss` = the pool, `token_use` = `access` (an ID token
 * is refused), `client_id` = the console's app client. Returns the token's claims.
 * @throws UnauthorizedError saying what is wrong with the token
 */
export const verifyAccessToken = async (token: string, pool: UserPoolSettings): Promise<JWTPayload & { sub: string }> => {
  if (!pool.issuer || !pool.clientId) throw new UnauthorizedError('Sessions are not accepted here: no user pool is configured.');
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, keySetOf(pool.issuer), { issuer: pool.issuer, algorithms: ['RS256'] }));
  } catch (error) {
    const reason = (error as { code?: string }).code === 'ERR_JWT_EXPIRED' ? 'The session has expired: sign in again.' : 'The session token is not valid.';
    throw new UnauthorizedError(reason, { cause: error });
  }
  if (payload.token_use !== 'access') throw new UnauthorizedError('An access token is required (this is not one).');
  if (payload.client_id !== pool.clientId) throw new UnauthorizedError('The session token was issued to another app client.');
  if (typeof payload.sub !== 'string' || !payload.sub) throw new UnauthorizedError('The session token names no user.');
  return payload as JWTPayload & { sub: string };
};
