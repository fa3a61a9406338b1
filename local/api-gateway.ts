import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { ROUTES, type RouteAuth } from '../lambdas/routes';
import { requestAuthorizer, type GatewayAuthorizer } from './api-gateway-authorizers';
import { proxyEvent, proxyIntegration, requestHeaders, type ApiHandler } from './api-gateway-integration';
import { answerClientError, continueUnlessOversize, PARSER_HEAD_BYTES, readBody, refuseOverLimits, refuseOversizeBody } from './api-gateway-limits';
import { gatewayAnswer, gatewayError, type GatewayResponse, type GatewayResponseType } from './api-gateway-responses';
import { compileRoute, findRoute, parseTarget, type GatewayRoute } from './api-gateway-routing';
import { ipRateRule, methodThrottles, sourceAddress, type IpRateRule, type StageThrottle } from './api-gateway-throttling';
import { installAwsLambdaGlobal } from './lambda-streaming';
import { countGatewayRequest } from './request-counter';

export type { ApiHandler } from './api-gateway-integration';
export type { Authorizer, GatewayAuthorizer } from './api-gateway-authorizers';
export type { GatewayResponse, GatewayResponseType } from './api-gateway-responses';
export type { GatewayRoute } from './api-gateway-routing';
export type { IpRateRule, StageThrottle } from './api-gateway-throttling';

export interface ApiGatewayOptions {
  port: number;
  /** @default the route table's rows (`routeTableRoutes()`) */
  routes?: readonly GatewayRoute[];
  /** Loads the handler of a route (a route table handler folder, or a function of a template). */
  loadHandler: (name: string) => Promise<ApiHandler>;
  /** The authorizers that routes name in `auth`. */
  authorizers: Record<string, GatewayAuthorizer>;
  /** Responses by type, from the template; the gateway's own envelope and messages otherwise. */
  gatewayResponses?: Partial<Record<GatewayResponseType, GatewayResponse>>;
  stage?: string;
  /**
   * Serves a request outside the stage (`/`, `/config.json`, …: the console locally); returns false
   * for what it does not serve, which the gateway answers 404 as before.
   */
  outsideStage?: (req: IncomingMessage, res: ServerResponse) => boolean;
  /**
   * The stage's default method throttle (its method settings on `/*\/*`), which each method not in
   * `methodThrottles` has a bucket of: the management API's, as the stack deploys it
   * (lib/stack-config.ts; a template's stage settings). @default none
   */
  throttle?: StageThrottle;
  /** Methods' own throttles, keyed `METHOD /path` (`* /path`: every method of the resource): the device door's. */
  methodThrottles?: Readonly<Record<string, StageThrottle>>;
  /** The WAF web ACL's per-IP rate rule in front of the stage. @default none */
  firewall?: IpRateRule;
  /** Told each route (`METHOD /path`) whose integration a request reaches, authorized: what a run exercised. */
  onIntegration?: (route: string) => void;
}

/** The route table as the gateway serves it. */
export const routeTableRoutes = (): GatewayRoute[] =>
  ROUTES.map((r) => ({ method: r.method, path: r.path, handler: r.handler, auth: r.auth, stream: r.stream }));

/**
 * The route table's method throttles besides the stage's default: the device door's methods
 * (`auth: 'device'`, `/device/...`), each with the device throttle, as the stack sets them
 * (lib/constructs/api.ts `throttleDoorOf`).
 */
export const routeTableMethodThrottles = (device: StageThrottle): Record<string, StageThrottle> =>
  Object.fromEntries(ROUTES.filter((r) => r.auth === 'device').map((r) => [`${r.method} ${r.path}`, device]));

/** The header each route table authorizer reads (its identity source), and the answer when it is missing. */
export const ROUTE_TABLE_IDENTITY: Record<Exclude<RouteAuth, 'none'>, { headers: readonly string[]; missing: string }> = {
  // As the stack (lib/constructs/api.ts IDENTITY_HEADERS): none, so the gateway's cache is off and the authorizer caches itself.
  'api-key': { headers: [], missing: 'A valid X-API-KEY header or session (Authorization: Bearer <access token>) is required.' },
  device: { headers: ['Authorization'], missing: 'A valid device token is required: Authorization: Bearer <jwt>.' },
};

/**
 * The gateway's request handler, phase by phase: the limits, the target's encoding, the stage,
 * the firewall (WAF's per-IP rate), the route, the method's throttle, the authorizer, the body,
 * and the proxy integration.
 */
const requestHandler = (options: ApiGatewayOptions, stage: string) => {
  const routes = (options.routes ?? routeTableRoutes()).map(compileRoute);
  const passesFirewall = options.firewall ? ipRateRule(options.firewall) : () => true;
  const admitted = methodThrottles(options.throttle, options.methodThrottles);
  const answer = gatewayAnswer(options.gatewayResponses);
  const authorize = requestAuthorizer(options.authorizers, stage, answer);
  const integrate = proxyIntegration(options.loadHandler, answer);

  return async (req: IncomingMessage, res: ServerResponse, requestId: string) => {
    if (refuseOverLimits(req, res, requestId)) return;
    const { path: fullPath, query, details } = parseTarget(req.url ?? '/');
    if (details.length) return gatewayError(res, 400, 'bad_request', 'The URL is not valid percent-encoding.', requestId, { details });
    const prefix = `/${stage}`;
    const path = fullPath.startsWith(`${prefix}/`) ? fullPath.slice(prefix.length) : undefined;
    const method = req.method ?? 'GET';
    if (path === undefined && fullPath !== prefix && options.outsideStage?.(req, res)) return;
    // WAF sees every request to the stage before API Gateway routes or throttles it: a blocked
    // address spends neither a method's throttle nor an authorizer's invocation.
    if (!passesFirewall(sourceAddress(req))) {
      return answer(res, 'WAF_FILTERED', 403, 'forbidden', 'Blocked by the API’s firewall: too many requests from this address; retry later.', requestId);
    }
    const match = path === undefined ? undefined : findRoute(routes, method, path);
    if (!match || path === undefined) {
      return answer(res, 'MISSING_AUTHENTICATION_TOKEN', 404, 'not_found', `No route ${method} ${fullPath.slice(0, 256)}.`, requestId);
    }
    const { route, pathParameters } = match;
    // Throttling comes before the authorizer, as on API Gateway: a throttled request costs no invocation.
    if (!admitted(route.method, route.path)) {
      return answer(res, 'THROTTLED', 429, 'rate_limited', 'Too many requests for the API; retry after Retry-After seconds.', requestId, {
        headers: { 'retry-after': '1' },
      });
    }
    countGatewayRequest(`${route.method} ${route.path}`);
    const { headers, multiValueHeaders } = requestHeaders(req);
    const authorized = await authorize(req, res, route, requestId, headers);
    if (!authorized) return;

    const body = await readBody(req);
    if (!body) return refuseOversizeBody(req, res, requestId);

    const event = proxyEvent({ req, requestId, stage, route, method, path, fullPath, pathParameters, query, headers, multiValueHeaders, body, ...authorized });
    options.onIntegration?.(`${route.method} ${route.path}`);
    return integrate(route, event, res, requestId);
  };
};

/**
 * A small API Gateway (REST, proxy integration) built from the route table: matches the route,
 * runs the REQUEST authorizer first (with its result cache), turns the request into a proxy
 * event, and writes the handler's answer back.
 */
export const startApiGateway = async (options: ApiGatewayOptions): Promise<Server> => {
  const stage = options.stage ?? 'v3';
  // Streamed routes' handlers call awslambda.streamifyResponse when they load.
  installAwsLambdaGlobal();
  const serve = requestHandler(options, stage);

  const server = createServer({ maxHeaderSize: PARSER_HEAD_BYTES }, (req, res) => {
    const requestId = randomUUID();
    serve(req, res, requestId).catch((error) => {
      // Logged with its stack for whoever runs the gateway; the client gets only the request id.
      console.error(`local API gateway failed (request ${requestId})`, error);
      if (!res.headersSent) gatewayError(res, 500, 'internal_error', 'The local gateway failed; retry later.', requestId);
      else res.destroy();
    });
  });
  // Node closes an idle keep-alive connection after 5 s, about when a client's pool (undici's
  // 4 s) may reuse it: on a loaded machine the two cross and the client's request meets a
  // reset. Idle connections are kept a minute, and the Keep-Alive header tells clients so.
  server.keepAliveTimeout = 60_000;
  server.on('clientError', answerClientError);
  server.on('checkContinue', continueUnlessOversize(server));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, '127.0.0.1', () => resolve());
  });
  return server;
};
