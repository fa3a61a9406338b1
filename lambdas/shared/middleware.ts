import middy, { type MiddlewareObj } from '@middy/core';
import { executionModeStreamifyResponse } from '@middy/core/StreamifyResponse';
import httpRouterHandler from '@middy/http-router';
import type { APIGatewayProxyResult, Context } from 'aws-lambda';
import type { Readable } from 'node:stream';
import * as z from 'zod';
import type { OperatorMetricName } from '../metrics';
import { routesOf, type Route, type RouteHandler } from '../routes';
import type { Operation, Operations } from '../schemas/operation';
import { CORS_ALLOWED_ORIGIN, MAX_BODY_BYTES } from './env';
import { AppError, NotFoundError, PayloadTooLargeError, ThrottledError, UnsupportedMediaTypeError, ValidationError, errorBody } from './errors';
import { parseRequest, type ApiEvent, type RequestSchemas } from './http';
import { BODY_MAX_DEPTH, JSON_RULES, fieldOf, parseJson, textNesting } from './json';
import { logger } from './logger';
import { countMetric, publishMetrics } from './metrics';
import { inRequestScope, type RequestScope } from './request-scope';

/** The answer of a streamed route (`stream: true` in the route table): the body is sent as it is read. */
export type StreamedResult = Omit<APIGatewayProxyResult, 'body'> & { body: Readable };

type Parsed<O, K extends 'path' | 'query' | 'body', Absent> = O extends { [P in K]: infer S extends z.ZodType } ? z.output<S> : Absent;

/** What a route function receives: its request, parsed by its operation's schemas. */
export interface RouteInput<O extends Operation = Operation> {
  path: Parsed<O, 'path', Record<string, never>>;
  query: Parsed<O, 'query', Record<string, never>>;
  body: Parsed<O, 'body', undefined>;
}

/**
 * A route function: receives its input parsed by its operation's schemas (so that the handler and
 * the OpenAPI document cannot disagree), calls one domain function, returns `ok(status, body)`.
 */
export type RouteFn<O extends Operation = Operation> = (input: RouteInput<O>, event: ApiEvent) => Promise<APIGatewayProxyResult | StreamedResult>;

type Request = middy.Request<ApiEvent, APIGatewayProxyResult, Error, Context>;

// SDK error names that mean "slow down", whichever store raised them.
const THROTTLE_ERRORS = new Set(['ProvisionedThroughputExceededException', 'ThrottlingException', 'RequestLimitExceeded', 'TooManyRequestsException']);

/** Turns anything thrown into the error the client sees. */
export const toAppError = (error: unknown): AppError => {
  if (error instanceof AppError) return error;
  const e = error as { name?: string; statusCode?: number; message?: string };
  if (e?.name && THROTTLE_ERRORS.has(e.name)) return new ThrottledError(undefined, { cause: error });
  // http-errors raised by middy's own middlewares
  if (e?.statusCode === 415) return new UnsupportedMediaTypeError('Send the body as JSON with Content-Type: application/json.');
  if (e?.statusCode === 422 || (e?.statusCode === 400 && e.message)) {
    return new ValidationError('The body is not valid JSON.', { details: [{ field: 'body', message: 'Malformed JSON.' }] });
  }
  return new AppError(500, 'internal_error', 'Something went wrong on our side; retry later.', { cause: error });
};

/** Most bad fields one answer names. */
const MAX_BODY_DETAILS = 100;
// application/json, or a JSON-based type such as application/merge-patch+json
const JSON_CONTENT_TYPE = /^application\/([a-z0-9.+-]+\+)?json(;|$)/i;

/**
 * Parses the JSON body, refusing what cannot round-trip through our stores and queues (see
 * `parseJson`): oversize bodies (413), other content types (415), malformed JSON, bodies nested
 * deeper than BODY_MAX_DEPTH, and numbers, strings or keys that would change on the way (400 with
 * a detail per bad field). A request without a body (every GET) skips parsing.
 *
 * Not middy's JSON body parser: its reviver gets no literal source, which is the only way to tell
 * `12345678901234567890` (silently rounded by JSON.parse) from `1e300`.
 *
 * @example middy(handler).use(jsonBody())
 */
export const jsonBody = (): MiddlewareObj<ApiEvent> => ({
  before: async (request) => {
    const { body, headers, isBase64Encoded } = request.event;
    if (body === null || body === undefined || body === '') {
      request.event.body = undefined;
      return;
    }
    const bytes = Buffer.byteLength(String(body), isBase64Encoded ? 'base64' : 'utf8');
    if (bytes > MAX_BODY_BYTES) {
      throw new PayloadTooLargeError(`The body is ${bytes} bytes; the limit is ${MAX_BODY_BYTES}.`);
    }
    if (!JSON_CONTENT_TYPE.test(headers?.['content-type'] ?? headers?.['Content-Type'] ?? '')) {
      throw new UnsupportedMediaTypeError('Send the body as JSON with Content-Type: application/json.');
    }
    const text = isBase64Encoded ? Buffer.from(String(body), 'base64').toString('utf8') : String(body);
    if (textNesting(text) > BODY_MAX_DEPTH) {
      throw new ValidationError(`The body nests deeper than ${BODY_MAX_DEPTH} levels.`, {
        details: [{ field: 'body', message: JSON_RULES.depth(BODY_MAX_DEPTH) }],
      });
    }
    let parsed: ReturnType<typeof parseJson>;
    try {
      parsed = parseJson(text);
    } catch (error) {
      throw new ValidationError('The body is not valid JSON.', { details: [{ field: 'body', message: 'Malformed JSON.' }], cause: error });
    }
    if (parsed.problems.length) {
      // The first ones are enough to fix the request; a 64 KB body can hold thousands.
      const details = parsed.problems.slice(0, MAX_BODY_DETAILS).map((p) => ({ field: fieldOf('body', p.path), message: p.message }));
      const more = parsed.problems.length - details.length;
      throw new ValidationError(`Invalid body: ${details.map((d) => d.field).join(', ')}${more ? ` and ${more} more` : ''}.`, { details });
    }
    request.event.body = parsed.value;
  },
});

// The operator metric of each 429 a handler answers (lambdas/metrics.ts).
const REFUSAL_METRICS: Readonly<Record<string, OperatorMetricName>> = { rate_limited: 'RateLimited', quota_exceeded: 'QuotaExceeded', throttled: 'Throttled' };

/**
 * Writes every error as `{error:{code,message,details},request_id}`; unknown errors are logged
 * and answered with a generic 500, and a 429 counts in its operator metric. Register it first so that its onError runs last.
 *
 * @example middy(handler).use(errorEnvelope()).use(jsonBody())
 */
export const errorEnvelope = (): MiddlewareObj<ApiEvent, APIGatewayProxyResult> => ({
  onError: async (request: Request) => {
    const error = toAppError(request.error);
    const requestId = request.event.requestContext?.requestId ?? request.context.awsRequestId ?? 'unknown';
    if (error.status >= 500) logger.error('request failed', { error: request.error as Error, requestId });
    const refusal = REFUSAL_METRICS[error.code];
    if (refusal) countMetric(refusal);
    request.response = {
      statusCode: error.status,
      headers: { ...error.headers, 'content-type': 'application/json' },
      body: JSON.stringify(errorBody(error, requestId)),
    };
  },
});

/**
 * Lets the console read every answer, errors included (CORS): `Access-Control-Allow-Origin` names
 * the console's one origin (never `*`), whatever the request's Origin, so that a cached answer is
 * right for everyone. Registered first, so that it runs last, after the error envelope.
 */
export const allowConsoleOrigin = (origin = CORS_ALLOWED_ORIGIN): MiddlewareObj<ApiEvent, APIGatewayProxyResult> => {
  const addHeaders = async (request: Request) => {
    if (!origin || !request.response) return;
    const headers = request.response.headers ?? {};
    // Added to the answer's own Vary (a streamed answer varies by Accept-Encoding), never in its place.
    const vary = [headers.vary, 'Origin'].filter(Boolean).join(', ');
    request.response.headers = { ...headers, 'access-control-allow-origin': origin, vary };
  };
  return { after: addHeaders, onError: addHeaders };
};

/** Writes the metrics a request added (shared/metrics.ts) once it is answered. Registered first, so that it runs last. */
const publishingMetrics = (): MiddlewareObj<ApiEvent, APIGatewayProxyResult> => ({
  after: async () => publishMetrics(),
  onError: async () => publishMetrics(),
});

// An operation without path parameters or query takes none: an unknown one is refused by name.
const NONE = z.strictObject({});

// Unwraps optional, default and the like to see whether a query parameter is an array (repeatable).
const isArray = (schema: z.ZodType): boolean => {
  const def = schema._zod.def as { type: string; innerType?: z.ZodType; in?: z.ZodType };
  if (def.type === 'array') return true;
  const inner = def.innerType ?? def.in;
  return inner ? isArray(inner) : false;
};

/** The schemas a route's requests are read with, from its operation. */
export const requestSchemasOf = (operation: Operation): RequestSchemas => ({
  path: operation.path ?? NONE,
  query: operation.query ?? NONE,
  body: operation.body,
  repeatable: Object.entries(operation.query?.shape ?? {})
    .filter(([, schema]) => isArray(schema as z.ZodType))
    .map(([name]) => name),
});

/**
 * Refuses a body sent to an operation that takes none, before anything reads it: such a request is
 * a 400 naming `body`, whatever its size or type (never a 413 or 415 for a body nobody wanted).
 */
const refuseUnexpectedBody = (match: (event: ApiEvent) => Route | undefined, operations: Operations): MiddlewareObj<ApiEvent> => ({
  before: async (request) => {
    const route = match(request.event);
    const body = request.event.body;
    if (!route || operations[route.operationId]?.body || body === null || body === undefined || body === '') return;
    throw new ValidationError('This route takes no body.', { details: [{ field: 'body', message: 'Must be empty: this route takes no body.' }] });
  },
});

/**
 * What a handler does around each request besides its route (domain/api-requests.ts for the
 * management and storage API): admit it within a rate, and count it on its workspace.
 */
export interface RequestHooks {
  /** Runs once the request is read and valid, before its route: throws to refuse it (429 rate_limited). */
  admit: (event: ApiEvent) => Promise<void>;
  /** Runs once it is answered or failed, with the workspace its route found the caller's, if any. */
  done: (event: ApiEvent, workspaceId: string | undefined) => Promise<void>;
}

/** Calls a handler's `done` hook after every request, answered or failed, with the workspace its scope noted. */
const afterRequests = (hooks: RequestHooks, scopes: WeakMap<object, RequestScope>): MiddlewareObj<ApiEvent, APIGatewayProxyResult> => {
  const done = async (request: Request) => {
    await hooks.done(request.event, scopes.get(request.event)?.workspaceId);
  };
  return { after: done, onError: done };
};

const notFound = ({ method, path }: { method: string; path: string }): never => {
  throw new NotFoundError(`No route ${method} ${path}.`);
};

/**
 * The one middy chain of every API handler: the resource's rows of the route table, each bound
 * to its route function by operationId, with its request parsed by the row's operation (unknown
 * query parameters, unknown body fields and a body where none is taken are 400s naming them).
 *
 * `hooks` run around each request of the management and storage API (a rate per key, the
 * workspaces' usage); the device API and the OpenAPI document have none.
 *
 * @example export const handler = httpHandler('fleets', FLEET_OPERATIONS, { listFleets, createFleet, getFleet }, apiRequestHooks(registryDb()));
 */
export const httpHandler = <Ops extends Operations>(
  resource: RouteHandler,
  operations: Ops,
  fns: { [K in keyof Ops]: RouteFn<Ops[K]> },
  hooks?: RequestHooks,
) => {
  const rows = routesOf(resource);
  const ids = (o: object) => Object.keys(o).sort().join();
  if (
    ids(fns) !== ids(operations) ||
    ids(fns) !==
      rows
        .map((r) => r.operationId)
        .sort()
        .join()
  ) {
    throw new Error(
      `Handler ${resource} does not match the route table (routes: ${rows.map((r) => r.operationId)}; operations: ${Object.keys(operations)}; functions: ${Object.keys(fns)})`,
    );
  }
  const scopes = new WeakMap<object, RequestScope>();
  const bound = rows.map((row) => {
    const schemas = requestSchemasOf(operations[row.operationId]);
    const fn = fns[row.operationId] as RouteFn;
    const run = async (event: ApiEvent) => {
      const input = parseRequest(schemas, event) as RouteInput;
      // A request refused as invalid is neither admitted nor counted: it writes nothing.
      if (!hooks) return fn(input, event);
      await hooks.admit(event);
      const scope: RequestScope = {};
      scopes.set(event, scope);
      return inRequestScope(scope, () => fn(input, event));
    };
    return { row, run };
  });
  const router = httpRouterHandler({
    routes: bound.map(({ row, run }) => ({ method: row.method, path: row.path, handler: run as never })),
    notFoundResponse: notFound,
  });
  // The same matching, to know the operation before the body is read.
  const matchRow = httpRouterHandler({
    routes: rows.map((row) => ({ method: row.method, path: row.path, handler: (() => row) as never })),
    notFoundResponse: (() => undefined) as never,
  }) as unknown as (event: ApiEvent) => Route | undefined;
  // A streamed resource answers through awslambda.streamifyResponse; errors are still sent whole.
  const mode = rows.some((r) => r.stream) ? { executionMode: executionModeStreamifyResponse } : {};
  const chain = middy<ApiEvent, APIGatewayProxyResult>(mode)
    .use(publishingMetrics())
    .use(allowConsoleOrigin())
    .use(errorEnvelope())
    .use(refuseUnexpectedBody(matchRow, operations))
    .use(jsonBody());
  // Registered last, so that its after and onError run first, whatever the others do with the answer.
  return (hooks ? chain.use(afterRequests(hooks, scopes)) : chain).handler(router as never);
};
