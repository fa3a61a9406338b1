import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { ConflictError, NotFoundError } from '../../../lambdas/shared/errors';
import { ok, type ApiEvent } from '../../../lambdas/shared/http';
import { errorEnvelope, httpHandler, jsonBody } from '../../../lambdas/shared/middleware';

const context = { awsRequestId: 'lambda-req' } as Context;

const event = (overrides: Partial<ApiEvent> = {}): ApiEvent =>
  ({
    httpMethod: 'GET',
    path: '/openapi.json',
    headers: { 'Content-Type': 'application/json' },
    requestContext: { requestId: 'api-req' },
    body: null,
    ...overrides,
  }) as unknown as ApiEvent;

describe('errorEnvelope', () => {
  it.each([
    [new NotFoundError('Device x not found.'), 404, 'not_found', 'Device x not found.'],
    [new ConflictError('Taken.'), 409, 'conflict', 'Taken.'],
    [Object.assign(new Error('slow down'), { name: 'ProvisionedThroughputExceededException' }), 429, 'throttled', 'The service is busy; retry with backoff.'],
    [new Error('secret internals'), 500, 'internal_error', 'Something went wrong on our side; retry later.'],
  ])('answers %p as %i %s', async (error, status, code, message) => {
    const handler = middy<ApiEvent>()
      .use(errorEnvelope())
      .handler(async () => {
        throw error;
      });

    const response = await handler(event(), context);

    expect(response.statusCode).toBe(status);
    expect(response.headers).toEqual({ 'content-type': 'application/json' });
    expect(JSON.parse(response.body)).toEqual({ error: { code, message, details: [] }, request_id: 'api-req' });
    expect(response.body).not.toContain('secret internals');
  });
});

describe('jsonBody', () => {
  const echo = middy<ApiEvent>()
    .use(errorEnvelope())
    .use(jsonBody())
    .handler(async (e: ApiEvent) => ok(200, { got: e.body ?? null }));

  it('parses a JSON body and leaves an empty one undefined', async () => {
    expect(JSON.parse((await echo(event({ body: '{"a":1}' }), context)).body)).toEqual({ got: { a: 1 } });
    expect(JSON.parse((await echo(event({ body: null }), context)).body)).toEqual({ got: null });
  });

  it.each([
    [{ body: '{"a":' }, 400, 'validation_error'],
    [{ body: 'a=1', headers: { 'Content-Type': 'text/plain' } }, 415, 'unsupported_media_type'],
    [{ body: JSON.stringify({ blob: 'x'.repeat(70_000) }) }, 413, 'payload_too_large'],
    [{ body: '{"__proto__":{"polluted":true}}' }, 400, 'validation_error'],
  ])('rejects %j with %i', async (overrides, status, code) => {
    const response = await echo(event(overrides as Partial<ApiEvent>), context);

    expect(response.statusCode).toBe(status);
    expect(JSON.parse(response.body).error.code).toBe(code);
  });
});

describe('httpHandler', () => {
  it('refuses to build a handler whose functions do not match its rows of the route table', () => {
    expect(() => httpHandler('openapi', {})).toThrow(/missing: getOpenApi/);
    expect(() => httpHandler('openapi', { getOpenApi: async () => ok(200, {}), other: async () => ok(200, {}) })).toThrow(/extra: other/);
  });

  it('routes by method and path, and answers 404 for a path the resource does not serve', async () => {
    const handler = httpHandler('openapi', { getOpenApi: async () => ok(200, { served: true }) });

    const hit = await handler(event(), context);
    const miss = await handler(event({ path: '/elsewhere' }), context);

    expect(JSON.parse(hit.body)).toEqual({ served: true });
    expect(miss.statusCode).toBe(404);
    expect(JSON.parse(miss.body).error.code).toBe('not_found');
  });
});
