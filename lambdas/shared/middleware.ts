import middy, { type MiddlewareObj } from '@middy/core';
import { executionModeStreamifyResponse } from '@middy/core/StreamifyResponse';
import httpRouterHandler from '@middy/http-router';
import type { APIGatewayProxyResult, Context } from 'aws-lambda';
import type { Readable } from 'node:stream';
import { routesOf, type RouteHandler } from '../routes';
import { MAX_BODY_BYTES } from './env';
import {
  AppError,
  NotFoundError,
  PayloadTooLargeError,
  ThrottledError,
  UnsupportedMediaTypeError,
  ValidationError,
  errorBody,
} from './errors';
import type { ApiEvent } from './http';
import { BODY_MAX_DEPTH, JSON_RULES, fieldOf, parseJson, textNesting } from './json';
import { logger } from './logger';

/** The answer of a streamed route (`stream: true` in the route table): the body is sent as it is read. */
export type StreamedResult = Omit<APIGatewayProxyResult, 'body'> & { body: Readable };

/** A route function: parses its input, calls one domain function, returns `ok(status, body)`. */
export type RouteFn = (event: ApiEvent) => Promise<APIGatewayProxyResult | StreamedResult>;

type Request = middy.Request<ApiEvent, APIGatewayProxyResult, Error, Context>;

// SDK error names that mean "slow down", whichever store raised them.
const THROTTLE_ERRORS = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'TooManyRequestsException',
]);

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

/**
 * Writes every error as `{error:{code,message,details},request_id}`; unknown errors are logged
 * and answered with a generic 500. Register it first so that its onError runs last.
 *
 * @example middy(handler).use(errorEnvelope()).use(jsonBody())
 */
export const errorEnvelope = (): MiddlewareObj<ApiEvent, APIGatewayProxyResult> => ({
  onError: async (request: Request) => {
    const error = toAppError(request.error);
    const requestId = request.event.requestContext?.requestId ?? request.context.awsRequestId ?? 'unknown';
    if (error.status >= 500) logger.error('request failed', { error: request.error as Error, requestId });
    request.response = {
      statusCode: error.status,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(errorBody(error, requestId)),
    };
  },
});

/**
 * The one middy chain of every API handler: the resource's rows of the route table, each bound
 * to its route function by operationId.
 *
 * @example export const handler = httpHandler('fleets', { listFleets, createFleet, getFleet });
 */
export const httpHandler = (resource: RouteHandler, fns: Record<string, RouteFn>) => {
  const rows = routesOf(resource);
  const missing = rows.filter((r) => !fns[r.operationId]).map((r) => r.operationId);
  const extra = Object.keys(fns).filter((id) => !rows.some((r) => r.operationId === id));
  if (missing.length || extra.length) {
    throw new Error(`Handler ${resource} does not match the route table (missing: ${missing}; extra: ${extra})`);
  }
  const router = httpRouterHandler({
    routes: rows.map((r) => ({ method: r.method, path: r.path, handler: fns[r.operationId] as never })),
    notFoundResponse: ({ method, path }: { method: string; path: string }) => {
      throw new NotFoundError(`No route ${method} ${path}.`);
    },
  });
  // A streamed resource answers through awslambda.streamifyResponse; errors are still sent whole.
  const mode = rows.some((r) => r.stream) ? { executionMode: executionModeStreamifyResponse } : {};
  return middy<ApiEvent, APIGatewayProxyResult>(mode)
    .use(errorEnvelope())
    .use(jsonBody())
    .handler(router as never);
};
