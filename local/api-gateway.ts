import type { APIGatewayAuthorizerResult, APIGatewayProxyEvent, APIGatewayProxyResult, APIGatewayRequestAuthorizerEvent, Context } from 'aws-lambda';
import { randomUUID } from 'node:crypto';
import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { DEVICE_TOKEN_FIELD, REFUSAL_CONTEXT_KEY, ROUTES, type RouteAuth } from '../lambdas/routes';
import { installAwsLambdaGlobal, isStreamingHandler, relayStreamingInvocation } from './lambda-streaming';
import { lambdaContext } from './lambda-invoke';
import { countGatewayRequest, withInvocation } from './request-counter';

/** A Lambda handler as the runtime calls it. */
type LambdaHandler<E, R> = (event: E, context: Context) => Promise<R>;
type ApiHandler = LambdaHandler<APIGatewayProxyEvent, APIGatewayProxyResult>;
type Authorizer = LambdaHandler<APIGatewayRequestAuthorizerEvent, APIGatewayAuthorizerResult>;

/** A Lambda proxy handler, as the gateway calls it. */
export type { ApiHandler, Authorizer };

/** A route as the gateway serves it: from the route table, or from a template's methods (cloud-assembly mode). */
export interface GatewayRoute {
  readonly method: string;
  /** Path below the stage, with `{name}` parameters. */
  readonly path: string;
  /** What `loadHandler` is given: a route table handler folder, or a function's logical ID. */
  readonly handler: string;
  /** The key of its authorizer in `authorizers`, or 'none'. */
  readonly auth: string;
  /** The integration streams its answer (ResponseTransferMode STREAM). */
  readonly stream?: boolean;
}

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

/** A gateway response (AWS::ApiGateway::GatewayResponse): its status, headers and body template. */
export interface GatewayResponse {
  status?: number;
  headers?: Record<string, string>;
  /** `$context.requestId` and `$context.error.messageString` are filled in, as API Gateway does. */
  template: string;
}

/** The gateway responses the local gateway gives (API Gateway's response types). */
export type GatewayResponseType =
  | 'UNAUTHORIZED'
  | 'ACCESS_DENIED'
  | 'MISSING_AUTHENTICATION_TOKEN'
  | 'AUTHORIZER_FAILURE'
  | 'REQUEST_TOO_LARGE'
  | 'THROTTLED'
  | 'DEFAULT_4XX'
  | 'DEFAULT_5XX';

/** A stage's throttling (its method settings on `/*\/*`): requests per second, and the bucket's size. */
export interface StageThrottle {
  rateLimit: number;
  burstLimit: number;
}

/**
 * API Gateway's throttling of a stage, a token bucket
 * (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-request-throttling.html):
 * it holds `burstLimit` requests and fills at `rateLimit` a second; a request finding it empty is
 * refused (429, the THROTTLED gateway response).
 */
export const tokenBucket = ({ rateLimit, burstLimit }: StageThrottle, now: () => number = Date.now) => {
  let tokens = burstLimit;
  let at = now();
  return () => {
    const t = now();
    tokens = Math.min(burstLimit, tokens + ((t - at) / 1000) * rateLimit);
    at = t;
    if (tokens < 1) return false;
    tokens -= 1;
    return true;
  };
};

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
  /** The stage's throttling, as the stack deploys it (lib/stack-config.ts; a template's stage settings). @default none */
  throttle?: StageThrottle;
}

/** The route table as the gateway serves it. */
export const routeTableRoutes = (): GatewayRoute[] =>
  ROUTES.map((r) => ({ method: r.method, path: r.path, handler: r.handler, auth: r.auth, stream: r.stream }));

/** The header each route table authorizer reads (its identity source), and the answer when it is missing. */
export const ROUTE_TABLE_IDENTITY: Record<Exclude<RouteAuth, 'none'>, { headers: readonly string[]; missing: string }> = {
  // As the stack (lib/constructs/api.ts IDENTITY_HEADERS): none, so the gateway's cache is off and the authorizer caches itself.
  'api-key': { headers: [], missing: 'A valid X-API-KEY header or session (Authorization: Bearer <access token>) is required.' },
  device: { headers: ['Authorization'], missing: 'A valid device token is required: Authorization: Bearer <jwt>.' },
};

// API Gateway REST limits: https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html
// (payload 10 MB; URL of a regional API 10,240 characters; request line and headers 10,240 bytes).
const MAX_PAYLOAD_BYTES = 10 * 1024 * 1024;
const MAX_URL_CHARS = 10_240;
const MAX_HEAD_BYTES = 10_240;
// Node parses at most this much head before giving up (its own default); what lies between
// MAX_HEAD_BYTES and this is refused by the request handler with the same answers.
const PARSER_HEAD_BYTES = 16 * 1024;
// An oversized body is read and thrown away up to this many bytes after the 413 is sent, so a
// client that is still sending (fetch, which reads no answer before its upload is done) sees the
// 413 rather than a reset; a client sending even more is cut off.
const MAX_DISCARDED_BYTES = 64 * 1024 * 1024;

type Details = Array<{ field: string; message: string }>;

interface CompiledRoute {
  route: GatewayRoute;
  /** The route's path split into segments; `{name}` segments are parameters. */
  segments: string[];
}

const compile = (route: GatewayRoute): CompiledRoute => ({ route, segments: route.path.split('/').slice(1) });

/**
 * Matches a request path, still percent-encoded and split on its literal slashes, against a route:
 * as API Gateway does, an encoded slash (`%2F`) or dot (`%2e%2e`) stays inside its segment and is
 * never a separator or a `..` that climbs, and parameters are decoded only once matched.
 */
const matchRoute = (compiled: CompiledRoute, segments: string[]): Record<string, string> | undefined => {
  // A trailing slash is ignored, as by API Gateway and the handlers' router.
  const wanted = segments.length > 1 && segments.at(-1) === '' ? segments.slice(0, -1) : segments;
  if (wanted.length !== compiled.segments.length) return undefined;
  const params: Record<string, string> = {};
  for (const [i, part] of compiled.segments.entries()) {
    const name = /^\{(\w+)\}$/.exec(part)?.[1];
    if (name) {
      if (!wanted[i]) return undefined;
      params[name] = decodeURIComponent(wanted[i]);
    } else if (wanted[i] !== part) return undefined;
  }
  return params;
};

/** `decodeURIComponent`, or undefined for malformed percent-encoding (`%zz`, a cut or invalid UTF-8 sequence). */
const decoded = (text: string): string | undefined => {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
};

/**
 * Splits the request target into its encoded path and its decoded query parameters (`+` is a
 * space, as in forms), or names the parts whose percent-encoding is malformed.
 */
const parseTarget = (target: string) => {
  const at = target.indexOf('?');
  const path = at < 0 ? target : target.slice(0, at);
  const rawQuery = at < 0 ? '' : target.slice(at + 1);
  const details: Details = [];
  if (path.split('/').some((segment) => decoded(segment) === undefined)) {
    details.push({ field: 'path', message: 'Malformed percent-encoding in the path.' });
  }
  const query: Array<[string, string]> = [];
  for (const pair of rawQuery.split('&')) {
    if (!pair) continue;
    const eq = pair.indexOf('=');
    const [key, value] = (eq < 0 ? [pair, ''] : [pair.slice(0, eq), pair.slice(eq + 1)]).map((part) => decoded(part.replace(/\+/g, ' ')));
    if (key === undefined || value === undefined) {
      details.push({ field: 'query', message: `Malformed percent-encoding in the query: ${JSON.stringify(pair.slice(0, 64))}.` });
      continue;
    }
    query.push([key, value]);
  }
  return { path, query, details };
};

/** The envelope of the gateway's own answers. */
const errorEnvelope = (code: string, message: string, requestId: string, details: Details = []) =>
  JSON.stringify({ error: { code, message, details }, request_id: requestId });

/** The gateway's own answers (missing route, authorizer deny, …) in the API's error envelope. */
const gatewayError = (
  res: ServerResponse,
  status: number,
  code: string,
  message: string,
  requestId: string,
  options: { details?: Details; headers?: Record<string, string> } = {},
) => {
  const body = errorEnvelope(code, message, requestId, options.details);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(body)),
    'x-amzn-requestid': requestId,
    ...options.headers,
  });
  res.end(body);
};

/** The request line of what the parser refused (all of it when no line end was received). */
const requestLineOf = (raw: Buffer | undefined) => {
  const text = raw?.toString('latin1') ?? '';
  const end = text.indexOf('\r\n');
  return end === -1 ? text : text.slice(0, end);
};

/**
 * Answers a request that Node's HTTP parser refused before any handler ran (a head over its
 * limit, a malformed request), on the raw socket, in the same envelope; Node's own answer is a
 * bare status line.
 */
const answerClientError = (error: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Duplex) => {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const requestId = randomUUID();
  const [status, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? // The parser stopped before the end of the request line: the URL is what is too long.
        requestLineOf(error.rawPacket).length > MAX_URL_CHARS
        ? [414, `The URL is longer than ${MAX_URL_CHARS} characters.`]
        : [431, `The request line and headers are larger than ${MAX_HEAD_BYTES} bytes.`]
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' || error.code === 'HPE_HEADERS_TIMEOUT'
        ? [408, 'The request was not received in time.']
        : [400, 'The request is not valid HTTP/1.1.'];
  const body = errorEnvelope(status === 408 ? 'request_timeout' : 'bad_request', message, requestId);
  // Whatever the client still sends is read and dropped, so that closing does not reset the
  // connection before the client has read the answer.
  socket.on('data', () => undefined);
  (socket as Socket).setTimeout(5_000, () => socket.destroy());
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
      `x-amzn-requestid: ${requestId}\r\nconnection: close\r\n\r\n${body}`,
  );
};

/** Size of the request line and headers as received (API Gateway's 10,240-byte quota counts both). */
const headBytes = (req: IncomingMessage) =>
  Buffer.byteLength(`${req.method} ${req.url} HTTP/${req.httpVersion}\r\n`) +
  // each header is `name: value\r\n`: two bytes after the name, two after the value
  req.rawHeaders.reduce((sum, part) => sum + Buffer.byteLength(part) + 2, 0);

/**
 * Answers 413 for a body over the payload limit while the client may still be sending it. The whole
 * answer is written at once (with its length, so the client has it all), but the response is ended
 * only when the client has finished sending: ending it earlier would let Node close a
 * `Connection: close` socket under a client still writing (fetch reads no answer before its upload
 * is done), which it would see as a reset. What it sends meanwhile is thrown away, up to
 * MAX_DISCARDED_BYTES; a client sending even more is cut off.
 */
const refuseOversizeBody = (req: IncomingMessage, res: ServerResponse, requestId: string) => {
  const body = errorEnvelope('payload_too_large', `The request is larger than ${MAX_PAYLOAD_BYTES / 1024 / 1024} MB.`, requestId);
  res.writeHead(413, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'x-amzn-requestid': requestId });
  res.write(body);
  if (req.readableEnded) return void res.end();
  let discarded = 0;
  req.removeAllListeners('data');
  req.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > MAX_DISCARDED_BYTES) req.socket.destroy();
  });
  req.once('end', () => res.end());
  req.resume();
};

/** The body, or undefined once it grows over the payload limit (the caller answers 413). */
const readBody = (req: IncomingMessage) =>
  new Promise<Buffer | undefined>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_PAYLOAD_BYTES) {
        req.off('data', onData);
        chunks.length = 0;
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });

/** The declared body size is over the payload limit (a chunked body is measured as it is read). */
const declaresOversizeBody = (req: IncomingMessage) => Number(req.headers['content-length'] ?? 0) > MAX_PAYLOAD_BYTES;

/**
 * A small API Gateway (REST, proxy integration) built from the route table: matches the route,
 * runs the REQUEST authorizer first (with its result cache), turns the request into a proxy
 * event, and writes the handler's answer back.
 */
export const startApiGateway = async (options: ApiGatewayOptions): Promise<Server> => {
  const stage = options.stage ?? 'v3';
  // Streamed routes' handlers call awslambda.streamifyResponse when they load.
  installAwsLambdaGlobal();
  const routes = (options.routes ?? routeTableRoutes()).map(compile);
  const admitted = options.throttle ? tokenBucket(options.throttle) : () => true;
  // Each authorizer caches its answers by its identity source: the API key, or the device token.
  const caches = new Map<string, Map<string, { expires: number; result: APIGatewayAuthorizerResult }>>();

  /**
   * One of the gateway's own answers: the template's gateway response of that type when there is
   * one (else its DEFAULT_4XX/5XX family), with the type's status, as API Gateway picks them;
   * otherwise the built-in envelope.
   */
  const answer = (
    res: ServerResponse,
    type: GatewayResponseType,
    status: number,
    code: string,
    message: string,
    requestId: string,
    extra: { details?: Details; authorizer?: Record<string, unknown>; headers?: Record<string, string> } = {},
  ) => {
    const family = status >= 500 ? 'DEFAULT_5XX' : 'DEFAULT_4XX';
    const response = options.gatewayResponses?.[type] ?? options.gatewayResponses?.[family];
    if (!response) return gatewayError(res, status, code, message, requestId, { details: extra.details, headers: extra.headers });
    // API Gateway pastes $context values into the template as they are; ours stay valid JSON.
    const body = response.template
      .replaceAll('$context.requestId', requestId)
      .replaceAll('$context.error.messageString', JSON.stringify(message))
      .replace(/\$context\.authorizer\.(\w+)/g, (_m, key: string) => JSON.stringify(String(extra.authorizer?.[key] ?? '')).slice(1, -1));
    res.writeHead(response.status ?? status, {
      'content-type': 'application/json',
      ...response.headers,
      'content-length': String(Buffer.byteLength(body)),
      'x-amzn-requestid': requestId,
    });
    res.end(body);
  };

  const authorize = async (key: string, identity: string, route: GatewayRoute, requestId: string, headers: Record<string, string>) => {
    const authorizer = options.authorizers[key];
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

  const serve = async (req: IncomingMessage, res: ServerResponse, requestId: string) => {
    const target = req.url ?? '/';
    if (target.length > MAX_URL_CHARS) {
      return gatewayError(res, 414, 'bad_request', `The URL is longer than ${MAX_URL_CHARS} characters.`, requestId);
    }
    if (headBytes(req) > MAX_HEAD_BYTES) {
      return gatewayError(res, 431, 'bad_request', `The request line and headers are larger than ${MAX_HEAD_BYTES} bytes.`, requestId);
    }
    if (declaresOversizeBody(req)) return refuseOversizeBody(req, res, requestId);
    const { path: fullPath, query: queryPairs, details } = parseTarget(target);
    if (details.length) return gatewayError(res, 400, 'bad_request', 'The URL is not valid percent-encoding.', requestId, { details });
    const prefix = `/${stage}`;
    const path = fullPath.startsWith(`${prefix}/`) ? fullPath.slice(prefix.length) : undefined;
    const method = req.method ?? 'GET';
    if (path === undefined && fullPath !== prefix && options.outsideStage?.(req, res)) return;
    const segments = path?.split('/').slice(1) ?? [];
    let match: { route: GatewayRoute; pathParameters: Record<string, string> } | undefined;
    for (const compiled of path === undefined ? [] : routes) {
      if (compiled.route.method !== method) continue;
      const pathParameters = matchRoute(compiled, segments);
      if (pathParameters) {
        match = { route: compiled.route, pathParameters };
        break;
      }
    }
    if (!match || path === undefined) {
      return answer(res, 'MISSING_AUTHENTICATION_TOKEN', 404, 'not_found', `No route ${method} ${fullPath.slice(0, 256)}.`, requestId);
    }
    const { route, pathParameters } = match;
    // Throttling comes before the authorizer, as on API Gateway: a throttled request costs no invocation.
    if (!admitted()) {
      return answer(res, 'THROTTLED', 429, 'rate_limited', 'Too many requests for the API; retry after Retry-After seconds.', requestId, {
        headers: { 'retry-after': '1' },
      });
    }
    countGatewayRequest(`${route.method} ${route.path}`);
    const headers: Record<string, string> = {};
    const multiValueHeaders: Record<string, string[]> = {};
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      const [name, value] = [req.rawHeaders[i], req.rawHeaders[i + 1]];
      headers[name] = value;
      (multiValueHeaders[name] ??= []).push(value);
    }
    let authorizer: Record<string, unknown> | undefined;
    if (route.auth !== 'none') {
      const authorizerOf = options.authorizers[route.auth];
      const missing = authorizerOf?.missingMessage ?? 'Unauthorized';
      const sources = (authorizerOf?.identityHeaders ?? []).map((name) => req.headers[name.toLowerCase()]);
      const cached = (authorizerOf?.cacheTtlMs ?? 0) > 0;
      if (cached && sources.some((value) => typeof value !== 'string' || !value)) return answer(res, 'UNAUTHORIZED', 401, 'unauthorized', missing, requestId);
      const identity = cached ? JSON.stringify(sources) : '';
      try {
        const result = await authorize(route.auth, identity, route, requestId, headers);
        if (result.policyDocument.Statement.some((s) => s.Effect !== 'Allow')) {
          // As the stack's ACCESS_DENIED gateway response (lib/constructs/api.ts): a 401 with the authorizer's reason.
          const refusal = String(result.context?.[REFUSAL_CONTEXT_KEY] ?? '');
          return answer(res, 'ACCESS_DENIED', 401, 'unauthorized', 'The device token is refused.', requestId, {
            details: [{ field: DEVICE_TOKEN_FIELD, message: refusal }],
            authorizer: result.context ?? {},
          });
        }
        authorizer = { ...result.context, principalId: result.principalId };
      } catch (error) {
        if ((error as Error).message === 'Unauthorized') {
          return answer(res, 'UNAUTHORIZED', 401, 'unauthorized', missing, requestId);
        }
        console.error('authorizer failed', error);
        return answer(res, 'AUTHORIZER_FAILURE', 500, 'internal_error', 'The authorizer failed; retry later.', requestId);
      }
    }

    const body = await readBody(req);
    if (!body) return refuseOversizeBody(req, res, requestId);

    // Without a prototype, a parameter named `__proto__` is a parameter like any other, as in the
    // JSON event API Gateway sends.
    const query: Record<string, string> = Object.create(null);
    const multiQuery: Record<string, string[]> = Object.create(null);
    for (const [key, value] of queryPairs) {
      query[key] = value;
      (multiQuery[key] ??= []).push(value);
    }
    // As API Gateway REST: `path` stays percent-encoded; path and query parameters are decoded.
    const event = {
      resource: route.path,
      path,
      httpMethod: method,
      headers,
      multiValueHeaders,
      queryStringParameters: Object.keys(query).length ? query : null,
      multiValueQueryStringParameters: Object.keys(multiQuery).length ? multiQuery : null,
      pathParameters: Object.keys(pathParameters).length ? pathParameters : null,
      stageVariables: null,
      requestContext: {
        requestId,
        stage,
        resourcePath: route.path,
        httpMethod: method,
        path: fullPath,
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
        return await relayStreamingInvocation(
          handler,
          event,
          lambdaContext({ functionName: route.handler, requestId }),
          res,
          { 'x-amzn-requestid': requestId },
          (error) => {
            console.error(`handler ${route.handler} crashed`, error);
            answer(res, 'DEFAULT_5XX', 502, 'internal_error', 'The handler failed; retry later.', requestId);
          },
        );
      }
      result = await withInvocation(route.handler, () => handler(event, lambdaContext({ functionName: route.handler, requestId })));
    } catch (error) {
      console.error(`handler ${route.handler} crashed`, error);
      return answer(res, 'DEFAULT_5XX', 502, 'internal_error', 'The handler failed; retry later.', requestId);
    }
    const outHeaders = { ...result.headers, 'x-amzn-requestid': requestId } as Record<string, string>;
    res.writeHead(result.statusCode, outHeaders);
    res.end(result.isBase64Encoded ? Buffer.from(result.body, 'base64') : result.body);
  };

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
  // `curl` and others ask before sending a large body: refuse it before it is sent.
  server.on('checkContinue', (req, res) => {
    if (declaresOversizeBody(req)) {
      gatewayError(res, 413, 'payload_too_large', `The request is larger than ${MAX_PAYLOAD_BYTES / 1024 / 1024} MB.`, randomUUID(), {
        headers: { connection: 'close' },
      });
      return;
    }
    res.writeContinue();
    server.emit('request', req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, '127.0.0.1', () => resolve());
  });
  return server;
};
