import { createHash } from 'node:crypto';
import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { REFUSAL_CONTEXT_KEY } from '../routes';
import { AppError } from './errors';
import { logger } from './logger';
import { publishMetrics } from './metrics';

export interface AuthorizerOptions<C extends object> {
  /** The request header carrying the credential (lowercase). */
  header: string;
  /**
   * Methods and paths the answer allows, below the stage (`/*\/*`: every route), so that one cached
   * answer serves every route the caller may use.
   */
  allow: string;
  /**
   * The caller a credential stands for; `headers` lets it read another header when `header` is
   * absent (the API authorizer: X-API-KEY, else a session's `Authorization: Bearer`).
   * @throws an AppError with status 401 when it stands for none.
   */
  authenticate: (credential: string | undefined, headers: (name: string) => string | undefined) => Promise<C>;
  principalOf: (caller: C) => string;
  /**
   * Seconds an accepted credential's answer is reused by this Lambda container (read at each
   * call; 0 or absent: never), for an authorizer whose API Gateway cache is off. The answer may
   * also say until when it holds at most (`expiresAt`, ms: a session's `exp`).
   */
  cacheTtlSeconds?: () => number;
  expiresAt?: (caller: C) => number | undefined;
}

const headerOf = (headers: APIGatewayRequestAuthorizerEvent['headers'], name: string) =>
  Object.entries(headers ?? {}).find(([key]) => key.toLowerCase() === name)?.[1] ?? undefined;

/**
 * An API Gateway REQUEST authorizer: the credential in `header` → the caller, passed to the
 * handlers as the request context. A rejected credential is answered 401 by API Gateway: its
 * UNAUTHORIZED gateway response, in our error envelope, when the refusal has no details; when it
 * has (a device token signed with the device's key but expired, too long-lived or revoked), a Deny
 * policy carrying the reason in its context, which the ACCESS_DENIED gateway response (status 401)
 * writes into `details` as `$context.authorizer.refusal`. API Gateway caches a Deny like an Allow.
 *
 * @example export const handler = requestAuthorizer({ header: 'x-api-key', allow: '/*\/*', authenticate, principalOf: (c) => c.accountId });
 */
export const requestAuthorizer = <C extends object>({ header, allow, authenticate, principalOf, cacheTtlSeconds, expiresAt }: AuthorizerOptions<C>) => {
  // Accepted credentials by their SHA-256 (never the secret itself), for cacheTtlSeconds.
  const cache = new Map<string, { until: number; caller: C }>();
  const cachedAuthenticate = async (event: APIGatewayRequestAuthorizerEvent) => {
    const read = (name: string) => headerOf(event.headers, name.toLowerCase());
    const ttlMs = (cacheTtlSeconds?.() ?? 0) * 1000;
    if (ttlMs <= 0) return authenticate(read(header), read);
    const now = Date.now();
    const id = createHash('sha256')
      .update(`${header}\n${read(header) ?? ''}\n${read('authorization') ?? ''}`)
      .digest('hex');
    const hit = cache.get(id);
    if (hit && hit.until > now) return hit.caller;
    const caller = await authenticate(read(header), read);
    if (cache.size > 10_000) cache.clear(); // a bound on memory; a miss only costs a lookup
    cache.set(id, { until: Math.min(now + ttlMs, expiresAt?.(caller) ?? Infinity), caller });
    return caller;
  };
  return async (event: APIGatewayRequestAuthorizerEvent): Promise<APIGatewayAuthorizerResult> => {
    const stage = event.methodArn.split('/').slice(0, 2).join('/');
    const policy = (Effect: 'Allow' | 'Deny') => ({
      Version: '2012-10-17',
      Statement: [{ Action: 'execute-api:Invoke', Effect, Resource: stage + allow }],
    });
    try {
      const caller = await cachedAuthenticate(event);
      return { principalId: principalOf(caller), policyDocument: policy('Allow'), context: { ...(caller as Record<string, string | number | boolean>) } };
    } catch (error) {
      if (error instanceof AppError && error.status === 401) {
        logger.info('credential refused', { header, reason: error.message });
        const refusal = error.details[0]?.message;
        if (refusal) return { principalId: 'refused', policyDocument: policy('Deny'), context: { [REFUSAL_CONTEXT_KEY]: refusal } };
        throw new Error('Unauthorized'); // the exact message API Gateway turns into a 401
      }
      throw error;
    } finally {
      publishMetrics(); // what the check counted (a device token refused)
    }
  };
};
