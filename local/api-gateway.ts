import type {
  APIGatewayAuthorizerResult,
  APIGatewayProxyEvent,
  APIGatewayProxyResult,
  APIGatewayRequestAuthorizerEvent,
  Context,
} from 'aws-lambda';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { ROUTES, type Route, type RouteAuth, type RouteHandler } from '../lambdas/routes';
import { installAwsLambdaGlobal, isStreamingHandler, relayStreamingInvocation } from './lambda-streaming';

/** A Lambda handler as the runtime calls it. */
type LambdaHandler<E, R> = (event: E, context: Context) => Promise<R>;
type ApiHandler = LambdaHandler<APIGatewayProxyEvent, APIGatewayProxyResult>;
type Authorizer = LambdaHandler<APIGatewayRequestAuthorizerEvent, APIGatewayAuthorizerResult>;

export interface ApiGatewayOptions {
  port: number;
  /** Loads the handler of a route table entry (the same module the stack bundles). */
  loadHandler: (name: RouteHandler) => Promise<ApiHandler>;
  authorizer: Authorizer;
  /** The device API's authorizer (routes with auth 'device'). */
  deviceAuthorizer?: Authorizer;
  /** How long an authorizer answer is reused for the same key, as API Gateway's result cache. */
  authorizerCacheTtlMs: number;
  stage?: string;
}

type AuthorizedBy = Exclude<RouteAuth, 'none'>;

/** The header each authorizer reads (its identity source), and the answer when it is missing. */
const IDENTITY_SOURCES: Record<AuthorizedBy, { header: string; missing: string }> = {
  'api-key': { header: 'x-api-key', missing: 'A valid X-API-KEY header is required.' },
  device: { header: 'authorization', missing: 'A valid device token is required: Authorization: Bearer <jwt>.' },
};

// API Gateway REST limits: https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html
const MAX_PAYLOAD_BYTES = 10 * 1024 * 1024;

interface CompiledRoute {
  route: Route;
  pattern: RegExp;
  params: string[];
}

const compile = (route: Route): CompiledRoute => {
  const params: string[] = [];
  const source = route.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{(\w+)\}/g, (_m, name: string) => {
    params.push(name);
    return '([^/]+)';
  });
  return { route, pattern: new RegExp(`^${source}/?$`), params };
};

/** The gateway's own answers (missing route, authorizer deny, …) in the API's error envelope. */
const gatewayError = (res: ServerResponse, status: number, code: string, message: string, requestId: string) => {
  res.writeHead(status, { 'content-type': 'application/json', 'x-amzn-requestid': requestId });
  res.end(JSON.stringify({ error: { code, message, details: [] }, request_id: requestId }));
};

const readBody = (req: IncomingMessage) =>
  new Promise<Buffer | undefined>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_PAYLOAD_BYTES) {
        resolve(undefined);
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });

const lambdaContext = (functionName: string, requestId: string): Context =>
  ({
    awsRequestId: requestId,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: '1024',
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    callbackWaitsForEmptyEventLoop: false,
    getRemainingTimeInMillis: () => 30_000,
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  }) as Context;

/**
 * A small API Gateway (REST, proxy integration) built from the route table: matches the route,
 * runs the REQUEST authorizer first (with its result cache), turns the request into a proxy
 * event, and writes the handler's answer back.
 */
export const startApiGateway = async (options: ApiGatewayOptions): Promise<Server> => {
  const stage = options.stage ?? 'v3';
  // Streamed routes' handlers call awslambda.streamifyResponse when they load.
  installAwsLambdaGlobal();
  const routes = ROUTES.map(compile);
  // Each authorizer caches its answers by its identity source: the API key, or the device token.
  const caches: Record<AuthorizedBy, Map<string, { expires: number; result: APIGatewayAuthorizerResult }>> = { 'api-key': new Map(), device: new Map() };
  const authorizers = { 'api-key': options.authorizer, device: options.deviceAuthorizer };

  const authorize = async (auth: AuthorizedBy, identity: string, route: Route, requestId: string, headers: Record<string, string>) => {
    const cache = caches[auth];
    const cached = cache.get(identity);
    if (cached && cached.expires > Date.now()) return cached.result;
    const authorizer = authorizers[auth];
    if (!authorizer) throw new Error(`no ${auth} authorizer`);
    const result = await authorizer(
      {
        type: 'REQUEST',
        methodArn: `arn:aws:execute-api:local:000000000000:local/${stage}/${route.method}${route.path}`,
        resource: route.path,
        path: route.path,
        httpMethod: route.method,
        headers,
      } as APIGatewayRequestAuthorizerEvent,
      lambdaContext(auth === 'device' ? 'device-authorizer' : 'authorizer', requestId),
    );
    if (options.authorizerCacheTtlMs > 0) cache.set(identity, { expires: Date.now() + options.authorizerCacheTtlMs, result });
    return result;
  };

  const serve = async (req: IncomingMessage, res: ServerResponse) => {
    const requestId = randomUUID();
    const url = new URL(req.url ?? '/', 'http://localhost');
    const prefix = `/${stage}`;
    const path = url.pathname.startsWith(`${prefix}/`) ? url.pathname.slice(prefix.length) : undefined;
    const method = req.method ?? 'GET';
    const match = path === undefined ? undefined : routes.map((r) => ({ r, m: r.pattern.exec(path) })).find(({ r, m }) => m && r.route.method === method);
    if (!match?.m || path === undefined) {
      return gatewayError(res, 404, 'not_found', `No route ${method} ${url.pathname}.`, requestId);
    }
    const { route } = match.r;
    const headers: Record<string, string> = {};
    const multiValueHeaders: Record<string, string[]> = {};
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      const [name, value] = [req.rawHeaders[i], req.rawHeaders[i + 1]];
      headers[name] = value;
      (multiValueHeaders[name] ??= []).push(value);
    }
    let authorizer: Record<string, unknown> | undefined;
    if (route.auth !== 'none') {
      const { header, missing } = IDENTITY_SOURCES[route.auth];
      const identity = req.headers[header];
      if (typeof identity !== 'string' || !identity) return gatewayError(res, 401, 'unauthorized', missing, requestId);
      try {
        const result = await authorize(route.auth, identity, route, requestId, headers);
        if (result.policyDocument.Statement.some((s) => s.Effect !== 'Allow')) {
          return gatewayError(res, 403, 'forbidden', 'These credentials may not call this route.', requestId);
        }
        authorizer = { ...result.context, principalId: result.principalId };
      } catch (error) {
        if ((error as Error).message === 'Unauthorized') {
          return gatewayError(res, 401, 'unauthorized', missing, requestId);
        }
        console.error('authorizer failed', error);
        return gatewayError(res, 500, 'internal_error', 'The authorizer failed; retry later.', requestId);
      }
    }

    const body = await readBody(req);
    if (!body) return gatewayError(res, 413, 'payload_too_large', 'The request is larger than 10 MB.', requestId);

    const query: Record<string, string> = {};
    const multiQuery: Record<string, string[]> = {};
    for (const [key, value] of url.searchParams) {
      query[key] = value;
      (multiQuery[key] ??= []).push(value);
    }
    const pathParameters = Object.fromEntries(match.r.params.map((name, i) => [name, decodeURIComponent(match.m![i + 1])]));
    const event = {
      resource: route.path,
      path,
      httpMethod: method,
      headers,
      multiValueHeaders,
      queryStringParameters: Object.keys(query).length ? query : null,
      multiValueQueryStringParameters: Object.keys(multiQuery).length ? multiQuery : null,
      pathParameters: match.r.params.length ? pathParameters : null,
      stageVariables: null,
      requestContext: {
        requestId,
        stage,
        resourcePath: route.path,
        httpMethod: method,
        path: url.pathname,
        authorizer,
        identity: { sourceIp: req.socket.remoteAddress ?? '127.0.0.1' },
      },
      body: body.length ? body.toString('utf8') : null,
      isBase64Encoded: false,
    } as unknown as APIGatewayProxyEvent;

    let result: APIGatewayProxyResult;
    try {
      const handler = await options.loadHandler(route.handler);
      if (route.stream && isStreamingHandler(handler)) {
        return await relayStreamingInvocation(handler, event, lambdaContext(route.handler, requestId), res, { 'x-amzn-requestid': requestId }, (error) => {
          console.error(`handler ${route.handler} crashed`, error);
          gatewayError(res, 502, 'internal_error', 'The handler failed; retry later.', requestId);
        });
      }
      result = await handler(event, lambdaContext(route.handler, requestId));
    } catch (error) {
      console.error(`handler ${route.handler} crashed`, error);
      return gatewayError(res, 502, 'internal_error', 'The handler failed; retry later.', requestId);
    }
    const outHeaders = { ...result.headers, 'x-amzn-requestid': requestId } as Record<string, string>;
    res.writeHead(result.statusCode, outHeaders);
    res.end(result.isBase64Encoded ? Buffer.from(result.body, 'base64') : result.body);
  };

  const server = createServer((req, res) => {
    serve(req, res).catch((error) => {
      console.error('local API gateway failed', error);
      if (!res.headersSent) gatewayError(res, 500, 'internal_error', 'The local gateway failed.', 'unknown');
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, '127.0.0.1', () => resolve());
  });
  return server;
};
