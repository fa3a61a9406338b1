import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { ConflictError, NotFoundError } from '../../../lambdas/shared/errors';
import { ok, type ApiEvent } from '../../../lambdas/shared/http';
import { FOTA_OPERATIONS } from '../../../lambdas/schemas/operations/fota';
import { OPENAPI_OPERATIONS } from '../../../lambdas/schemas/operations/openapi';
import { BODY_MAX_DEPTH, JSON_RULES } from '../../../lambdas/shared/json';
import { installAwsLambdaGlobal, ResponseStream } from '../../../local/lambda-streaming';

// The FOTA resource streams its answers (awslambda.streamifyResponse, which it calls when built).
installAwsLambdaGlobal();
const { allowConsoleOrigin, errorEnvelope, httpHandler, jsonBody } = await import('../../../lambdas/shared/middleware');

/** Invokes a streaming handler and reads its whole answer: the prelude's status, then the body. */
const invokeStreamed = async (handler: unknown, request: ApiEvent) => {
  const stream = new ResponseStream();
  const chunks: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(Buffer.from(chunk)));
  const ended = new Promise((resolve) => stream.on('end', resolve));
  await (handler as (e: ApiEvent, s: ResponseStream, c: Context) => Promise<unknown>)(request, stream, context);
  await ended;
  const bytes = Buffer.concat(chunks);
  const at = bytes.indexOf(Buffer.alloc(8));
  return { statusCode: (JSON.parse(bytes.subarray(0, at).toString()) as { statusCode: number }).statusCode, body: bytes.subarray(at + 8).toString() };
};

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

  it('keeps what JSON.parse alone would keep as well: emoji, non-characters, empty keys, extreme doubles', async () => {
    const text = '{"":{"s":"😀 \uffff\ufffe","n":1e300,"m":1e-200,"i":-9007199254740991}}';

    const response = await echo(event({ body: text }), context);

    expect(response.statusCode).toBe(200);
    expect(JSON.parse(response.body)).toEqual({ got: JSON.parse(text) });
  });

  it('reads a base64 body and a JSON-based content type', async () => {
    const response = await echo(
      event({ body: Buffer.from('{"s":"é😀"}').toString('base64'), isBase64Encoded: true, headers: { 'content-type': 'application/merge-patch+json' } }),
      context,
    );

    expect(JSON.parse(response.body)).toEqual({ got: { s: 'é😀' } });
  });

  it('names the first 100 bad fields of a body that has thousands', async () => {
    const body = JSON.stringify({ value: Array.from({ length: 3000 }, () => 0) }).replaceAll('0', '9007199254740993');

    const response = await echo(event({ body }), context);

    const { error } = JSON.parse(response.body);
    expect(response.statusCode).toBe(400);
    expect(error.details).toHaveLength(100);
    expect(error.details[99]).toEqual({ field: 'body.value.99', message: JSON_RULES.integer });
    expect(error.message).toMatch(/and 2900 more\.$/);
  });

  it.each([
    ['an integer beyond 2^53', '{"value":{"n":12345678901234567890}}', 'body.value.n', JSON_RULES.integer],
    ['a negative one in an array', '{"value":[1,2,-9007199254740992]}', 'body.value.2', JSON_RULES.integer],
    ['a number beyond a double', '{"value":{"n":1e400}}', 'body.value.n', JSON_RULES.range],
    ['an unpaired surrogate', '{"value":{"s":"\\ud800"}}', 'body.value.s', JSON_RULES.unicode],
    ['an unpaired surrogate in a key', '{"value":{"\\udfff":1}}', 'body.value.\udfff', JSON_RULES.unicode],
    ['a prototype key', '{"value":{"__proto__":{}}}', 'body.value.__proto__', JSON_RULES.reserved],
    ['a body one level too deep', `{"value":${'['.repeat(BODY_MAX_DEPTH)}${']'.repeat(BODY_MAX_DEPTH)}}`, 'body', JSON_RULES.depth(BODY_MAX_DEPTH)],
    [
      '30,000 levels (JSON.parse alone overflows the stack with a reviver)',
      `{"v":${'['.repeat(30_000)}${']'.repeat(30_000)}}`,
      'body',
      JSON_RULES.depth(BODY_MAX_DEPTH),
    ],
  ])('answers 400 naming the field and the limit for %s', async (_what, body, field, message) => {
    const response = await echo(event({ body }), context);

    expect(response.statusCode).toBe(400);
    expect(JSON.parse(response.body).error).toMatchObject({ code: 'validation_error', details: [{ field, message }] });
  });
});

describe('httpHandler', () => {
  it('refuses to build a handler whose functions or operations do not match its rows of the route table', () => {
    expect(() => httpHandler('openapi', OPENAPI_OPERATIONS, {} as never)).toThrow(/does not match the route table/);
    expect(() => httpHandler('openapi', {}, { getOpenApi: async () => ok(200, {}) } as never)).toThrow(/does not match the route table/);
    expect(() => httpHandler('openapi', OPENAPI_OPERATIONS, { getOpenApi: async () => ok(200, {}), other: async () => ok(200, {}) } as never)).toThrow(
      /does not match the route table/,
    );
  });

  it('routes by method and path, and answers 404 for a path the resource does not serve', async () => {
    const handler = httpHandler('openapi', OPENAPI_OPERATIONS, { getOpenApi: async () => ok(200, { served: true }) });

    const hit = await handler(event(), context);
    const miss = await handler(event({ path: '/elsewhere' }), context);

    expect(JSON.parse(hit.body)).toEqual({ served: true });
    expect(miss.statusCode).toBe(404);
    expect(JSON.parse(miss.body).error.code).toBe('not_found');
  });

  describe('reads each request with its operation’s schemas', () => {
    const seen: unknown[] = [];
    const fota = httpHandler('fota', FOTA_OPERATIONS, {
      getFota: async (input) => (seen.push(input), ok(200, {})),
      cancelFota: async (input) => (seen.push(input), ok(200, {})),
      scheduleFota: async (input) => (seen.push(input), ok(200, {})),
      scheduleFleetFota: async (input) => (seen.push(input), ok(200, {})),
    });
    const call = async (overrides: Partial<ApiEvent>) => {
      const response = await invokeStreamed(fota, event({ httpMethod: 'POST', path: '/workspaces/wks-1/fota/fw/versions/1.0', ...overrides }));
      return { status: response.statusCode, body: JSON.parse(response.body) };
    };
    const getFota = { httpMethod: 'GET', path: '/devices/dev-1/fota' };
    beforeEach(() => {
      seen.length = 0;
    });

    it('hands the route function its parsed path and query, repeatable parameters as arrays', async () => {
      const { status } = await call({ multiValueQueryStringParameters: { fleet: ['flt-a', 'flt-b'] } });

      expect(status).toBe(200);
      // The fleet-wide FOTA takes an optional body: an absent one reads as {}.
      expect(seen).toEqual([{ path: { workspaceId: 'wks-1', firmwareId: 'fw', firmwareVersion: '1.0' }, query: { fleet: ['flt-a', 'flt-b'] }, body: {} }]);
    });

    it.each([
      ['an unknown query parameter', { multiValueQueryStringParameters: { flete: ['flt-a'] } }, [{ field: 'query.flete', message: 'Unknown field.' }]],
      [
        'a query parameter of a route that takes none',
        { httpMethod: 'GET', path: '/devices/dev-1/fota', multiValueQueryStringParameters: { fleet: ['x'] } },
        [{ field: 'query.fleet', message: 'Unknown field.' }],
      ],
      [
        'a malformed ID',
        { multiValueQueryStringParameters: { fleet: ['flt a'] } },
        [{ field: 'query.fleet.0', message: expect.stringMatching(/Must be an ID/) }],
      ],
      ['a JSON body where none is taken', { ...getFota, body: '{}' }, [{ field: 'body', message: expect.stringMatching(/no body/) }]],
      [
        'a text body where none is taken (never a 415)',
        { ...getFota, body: 'a=1', headers: { 'Content-Type': 'text/plain' } },
        [{ field: 'body', message: expect.stringMatching(/no body/) }],
      ],
      [
        'a huge body where none is taken (never a 413)',
        { ...getFota, body: 'x'.repeat(70_000) },
        [{ field: 'body', message: expect.stringMatching(/no body/) }],
      ],
      [
        'an unknown body field',
        { body: '{"rollout":{},"zz":1}', headers: { 'Content-Type': 'application/json' } },
        [{ field: 'body.zz', message: 'Unknown field.' }],
      ],
    ])('answers 400 to %s, naming it, without calling the route', async (_name, overrides, details) => {
      const { status, body } = await call(overrides as Partial<ApiEvent>);

      expect(status).toBe(400);
      expect(body.error).toEqual({ code: 'validation_error', message: expect.any(String), details });
      expect(seen).toEqual([]);
    });

    it('names every bad field of a request at once', async () => {
      const { body } = await call({ path: '/workspaces/wks%201/fota/fw/versions/1.0', multiValueQueryStringParameters: { x: ['1'] } });

      expect(body.error.details.map((d: { field: string }) => d.field)).toEqual(['path.workspaceId', 'query.x']);
    });
  });
});

describe('allowConsoleOrigin', () => {
  const ORIGIN = 'https://d111111abcdef8.cloudfront.net';

  it('names the console’s origin on an answer and on an error envelope, so that the console can read both', async () => {
    const fine = middy<ApiEvent>()
      .use(allowConsoleOrigin(ORIGIN))
      .use(errorEnvelope())
      .handler(async () => ok(200, { fine: true }));
    const failing = middy<ApiEvent>()
      .use(allowConsoleOrigin(ORIGIN))
      .use(errorEnvelope())
      .handler(async () => {
        throw new NotFoundError('Device x not found.');
      });

    const answers = [await fine(event(), context), await failing(event(), context)];

    for (const answer of answers) expect(answer.headers).toEqual({ 'content-type': 'application/json', 'access-control-allow-origin': ORIGIN, vary: 'Origin' });
    expect(answers[1].statusCode).toBe(404);
  });

  it('adds Origin to the answer’s own Vary rather than replacing it (a streamed answer varies by Accept-Encoding)', async () => {
    const gzipped = middy<ApiEvent>()
      .use(allowConsoleOrigin(ORIGIN))
      .handler(async () => ({ statusCode: 200, headers: { 'content-type': 'application/json', vary: 'Accept-Encoding' }, body: '{}' }));

    const answer = await gzipped(event(), context);

    expect(answer.headers).toEqual({ 'content-type': 'application/json', 'access-control-allow-origin': ORIGIN, vary: 'Accept-Encoding, Origin' });
  });

  it('adds nothing without a console origin (the local console is same-origin)', async () => {
    const handler = middy<ApiEvent>()
      .use(allowConsoleOrigin(''))
      .use(errorEnvelope())
      .handler(async () => ok(200, {}));

    expect((await handler(event(), context)).headers).toEqual({ 'content-type': 'application/json' });
  });
});
