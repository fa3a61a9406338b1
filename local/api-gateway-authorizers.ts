import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent, Context } from 'aws-lambda';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { DEVICE_TOKEN_FIELD, REFUSAL_CONTEXT_KEY } from '../lambdas/routes';
import { lambdaContext } from './lambda-invoke';
import type { GatewayAnswer } from './api-gateway-responses';
import type { GatewayRoute } from './api-gateway-routing';
import { withInvocation } from './request-counter';

/** A REQUEST authorizer's Lambda handler, as the gateway calls it. */
export type Authorizer = (event: APIGatewayRequestAuthorizerEvent, context: Context) => Promise<APIGatewayAuthorizerResult>;

/** A REQUEST authorizer: the Lambda, the header it reads (its identity source) and its result cache. */
export interface GatewayAuthorizer {
  handler: Authorizer;
  /**
   * Its identity sources (headers, matched without regard to case), as API Gateway treats them:
   * with the result cache on, each must be present (else a 401 without calling the authorizer)
   * and together they key the cache; with it off (cacheTtlMs 0) the authorizer always runs and
   * reads what it wants.
   */
  identityHeaders: string[];
  /** How long an answer is reused for the same identity, as API Gateway's result cache (0: off). */
  cacheTtlMs: number;
  functionName: string;
  /** The message of the 401 when the header is missing. */
  missingMessage?: string;
}

/** What the authorizer let through, for the proxy event's `requestContext.authorizer`. */
export interface Authorized {
  authorizer: Record<string, unknown> | undefined;
}

/**
 * Runs the route's REQUEST authorizer on a request (none for an `auth: 'none'` route): resolves
 * with what it let through, or with undefined once it has answered the refusal (401) or the
 * authorizer's failure (500).
 */
export type RequestAuthorizer = (
  req: IncomingMessage,
  res: ServerResponse,
  route: GatewayRoute,
  requestId: string,
  headers: Record<string, string>,
) => Promise<Authorized | undefined>;

/** Calls the authorizers by their key, each answer reused for its identity as long as its cache keeps it. */
const cachedAuthorizerCalls = (authorizers: Record<string, GatewayAuthorizer>, stage: string) => {
  // Each authorizer caches its answers by its identity source: the API key, or the device token.
  const caches = new Map<string, Map<string, { expires: number; result: APIGatewayAuthorizerResult }>>();
  return async (key: string, identity: string, route: GatewayRoute, requestId: string, headers: Record<string, string>) => {
    const authorizer = authorizers[key];
    if (!authorizer) throw new Error(`no authorizer '${key}'`);
    if (!caches.has(key)) caches.set(key, new Map());
    const cache = caches.get(key)!;
    const cached = authorizer.cacheTtlMs > 0 ? cache.get(identity) : undefined;
    if (cached && cached.expires > Date.now()) return cached.result;
    const result = await withInvocation(authorizer.functionName, () =>
      authorizer.handler(
        {
          type: 'REQUEST',
          methodArn: `arn:aws:execute-api:local:000000000000:local/${stage}/${route.method}${route.path}`,
          resource: route.path,
          path: route.path,
          httpMethod: route.method,
          headers,
        } as APIGatewayRequestAuthorizerEvent,
        lambdaContext({ functionName: authorizer.functionName, requestId }),
      ),
    );
    if (authorizer.cacheTtlMs > 0) cache.set(identity, { expires: Date.now() + authorizer.cacheTtlMs, result });
    return result;
  };
};

/** The authorization phase of the gateway: see `RequestAuthorizer`. */
export const requestAuthorizer = (authorizers: Record<string, GatewayAuthorizer>, stage: string, answer: GatewayAnswer): RequestAuthorizer => {
  const authorize = cachedAuthorizerCalls(authorizers, stage);
  return async (req, res, route, requestId, headers) => {
    if (route.auth === 'none') return { authorizer: undefined };
    const authorizerOf = authorizers[route.auth];
    const missing = authorizerOf?.missingMessage ?? 'Unauthorized';
    const sources = (authorizerOf?.identityHeaders ?? []).map((name) => req.headers[name.toLowerCase()]);
    const cached = (authorizerOf?.cacheTtlMs ?? 0) > 0;
    if (cached && sources.some((value) => typeof value !== 'string' || !value))
      return void answer(res, 'UNAUTHORIZED', 401, 'unauthorized', missing, requestId);
    const identity = cached ? JSON.stringify(sources) : '';
    try {
      const result = await authorize(route.auth, identity, route, requestId, headers);
      if (result.policyDocument.Statement.some((s) => s.Effect !== 'Allow')) {
        // As the stack's ACCESS_DENIED gateway response (lib/constructs/api.ts): a 401 with the authorizer's reason.
        const refusal = String(result.context?.[REFUSAL_CONTEXT_KEY] ?? '');
        return void answer(res, 'ACCESS_DENIED', 401, 'unauthorized', 'The device token is refused.', requestId, {
          details: [{ field: DEVICE_TOKEN_FIELD, message: refusal }],
          authorizer: result.context ?? {},
        });
      }
      return { authorizer: { ...result.context, principalId: result.principalId } };
    } catch (error) {
      if ((error as Error).message === 'Unauthorized') {
        return void answer(res, 'UNAUTHORIZED', 401, 'unauthorized', missing, requestId);
      }
      console.error('authorizer failed', error);
      return void answer(res, 'AUTHORIZER_FAILURE', 500, 'internal_error', 'The authorizer failed; retry later.', requestId);
    }
  };
};
