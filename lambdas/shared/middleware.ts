import middy, { type MiddlewareObj } from '@middy/core';
import { executionModeStreamifyResponse } from '@middy/core/StreamifyResponse';
import httpJsonBodyParser from '@middy/http-json-body-parser';
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

/**
 * Rejects oversize bodies, then parses JSON with middy's parser; a request without a body
 * (every GET) skips parsing.
 *
 * @example middy(handler).use(jsonBody())
 */
export const jsonBody = (): MiddlewareObj<ApiEvent> => {
  const parser = httpJsonBodyParser();
  return {
    before: async (request) => {
      const body = request.event.body;
      if (body === null || body === undefined || body === '') {
        request.event.body = undefined;
        return;
      }
      const bytes = Buffer.byteLength(String(body), request.event.isBase64Encoded ? 'base64' : 'utf8');
      if (bytes > MAX_BODY_BYTES) {
        throw new PayloadTooLargeError(`The body is ${bytes} bytes; the limit is ${MAX_BODY_BYTES}.`);
      }
      await parser.before?.(request as never);
    },
  };
};

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
