import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { createServer, request, type Server } from 'node:http';
import { Readable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import { TIMESERIES_OPERATIONS } from '../../../lambdas/schemas/operations/timeseries';
import { NotFoundError } from '../../../lambdas/shared/errors';
import type { ApiEvent } from '../../../lambdas/shared/http';
import { acceptsGzip, streamJson } from '../../../lambdas/shared/json-stream';
import { installAwsLambdaGlobal, isStreamingHandler, localAwsLambda, relayStreamingInvocation, ResponseStream } from '../../../local/lambda-streaming';

installAwsLambdaGlobal();
// Loaded after the global exists, as the Lambda runtime guarantees.
const { httpHandler } = await import('../../../lambdas/shared/middleware');

const event = (headers: Record<string, string> = {}, path = '/timeseries/wks-1/data') =>
  ({
    httpMethod: 'GET',
    path,
    resource: '/timeseries/{workspaceId}/data',
    headers,
    multiValueHeaders: {},
    requestContext: { requestId: 'r-1' },
  }) as unknown as ApiEvent;
const context = { awsRequestId: 'r-1' } as Context;

async function* records(count: number, failAt = Infinity) {
  for (let i = 0; i < count; i++) {
    if (i === failAt) throw new Error('store failed');
    yield { i, text: 'x'.repeat(100) };
  }
}

const readAll = async (stream: NodeJS.ReadableStream) => {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks);
};

/** Runs a streaming handler behind a real HTTP server, as the local gateway does. */
const serve = async (handler: (e: APIGatewayProxyEvent, s: ResponseStream, c: Context) => Promise<unknown>) => {
  const server: Server = createServer((_req, res) => {
    void relayStreamingInvocation(handler, {} as APIGatewayProxyEvent, context, res, { 'x-amzn-requestid': 'r-1' }, () => {
      res.writeHead(502).end('early failure');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const get = () =>
    new Promise<{ status: number; headers: Record<string, unknown>; body: string }>((resolve, reject) => {
      request(`http://127.0.0.1:${port}/`, (res) => {
        readAll(res).then((body) => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: body.toString('utf8') }), reject);
      })
        .on('error', reject)
        .end();
    });
  return { get, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
};

describe('Accept-Encoding', () => {
  it.each([
    [{ 'Accept-Encoding': 'gzip' }, true],
    [{ 'accept-encoding': 'br, gzip;q=0.8' }, true],
    [{ 'accept-encoding': 'x-gzip' }, true],
    [{ 'accept-encoding': 'gzip;q=0' }, false],
    [{ 'accept-encoding': 'br, deflate' }, false],
    [{}, false],
  ])('%j takes gzip: %s', (headers, expected) => {
    expect(acceptsGzip(event(headers))).toBe(expected);
  });
});

describe('streamed JSON', () => {
  it('writes {"result":[…]} in chunks that join into valid JSON', async () => {
    const answer = await streamJson(event(), 'result', records(5000));

    const body = await readAll(answer.body);

    expect(answer.statusCode).toBe(200);
    expect(answer.headers).toEqual({ 'content-type': 'application/json', vary: 'Accept-Encoding' });
    expect(JSON.parse(body.toString('utf8')).result).toHaveLength(5000);
  });

  it('gzips when the client takes gzip', async () => {
    const answer = await streamJson(event({ 'accept-encoding': 'gzip' }), 'result', records(3));

    const body = await readAll(answer.body);

    expect(answer.headers).toMatchObject({ 'content-encoding': 'gzip' });
    expect(JSON.parse(gunzipSync(body).toString('utf8'))).toEqual({ result: [0, 1, 2].map((i) => ({ i, text: 'x'.repeat(100) })) });
  });

  it('fails before answering when the first record fails, so the error keeps its status', async () => {
    await expect(streamJson(event(), 'result', records(3, 0))).rejects.toThrow('store failed');
  });

  it('breaks the stream when a later record fails: no short, valid document', async () => {
    const answer = await streamJson(event({ 'accept-encoding': 'gzip' }), 'result', records(3000, 2000));

    await expect(readAll(answer.body)).rejects.toThrow('store failed');
  });
});

describe('Lambda response streaming, locally', () => {
  it('marks streamified handlers and keeps what other libraries put on the awslambda global', () => {
    const global = globalThis as { awslambda?: Record<string, unknown> };
    global.awslambda = { InvokeStore: 'kept' };

    installAwsLambdaGlobal();

    expect(global.awslambda).toMatchObject({ InvokeStore: 'kept', streamifyResponse: localAwsLambda.streamifyResponse });
    expect(isStreamingHandler(localAwsLambda.streamifyResponse(async () => undefined))).toBe(true);
    expect(isStreamingHandler(async () => undefined)).toBe(false);
  });

  it('relays the prelude’s status, headers and cookies, then the body as it is written', async () => {
    const server = await serve(async (_e, stream) => {
      const http = localAwsLambda.HttpResponseStream.from(stream, { statusCode: 201, headers: { 'content-type': 'text/plain' }, cookies: ['a=b'] });
      http.write('hello, ');
      http.end('world');
    });

    const answer = await server.get();
    await server.close();

    expect(answer).toMatchObject({
      status: 201,
      body: 'hello, world',
      headers: { 'content-type': 'text/plain', 'set-cookie': ['a=b'], 'x-amzn-requestid': 'r-1' },
    });
  });

  it('answers a plain stream with its content type and status 200', async () => {
    const server = await serve(async (_e, stream) => {
      stream.setContentType('text/csv');
      stream.end('a,b\n');
    });

    const answer = await server.get();
    await server.close();

    expect(answer).toMatchObject({ status: 200, body: 'a,b\n', headers: { 'content-type': 'text/csv' } });
  });

  it('hands a failure before the first byte to the gateway, and cuts the connection after it', async () => {
    const early = await serve(async () => {
      throw new Error('boom');
    });
    const late = await serve(async (_e, stream) => {
      const http = localAwsLambda.HttpResponseStream.from(stream, { statusCode: 200 });
      http.write('{"result":[');
      await new Promise((resolve) => setImmediate(resolve));
      throw new Error('boom');
    });

    const earlyAnswer = await early.get();
    const lateAnswer = late.get();

    expect(earlyAnswer).toMatchObject({ status: 502, body: 'early failure' });
    await expect(lateAnswer).rejects.toThrow();
    await Promise.all([early.close(), late.close()]);
  });
});

describe('a streamed resource through the middy chain', () => {
  const invoke = async (fn: () => Promise<unknown>) => {
    const handler = httpHandler('timeseries', TIMESERIES_OPERATIONS, {
      queryTimeseries: fn as never,
      aggregateTimeseries: fn as never,
      createExport: fn as never,
      listExports: fn as never,
      getExport: fn as never,
    }) as unknown as (e: unknown, s: ResponseStream, c: Context) => Promise<void>;
    const stream = new ResponseStream();
    const [, bytes] = await Promise.all([handler(event(), stream, context), readAll(stream)]);
    const at = bytes.indexOf(Buffer.alloc(8));
    return { prelude: JSON.parse(bytes.subarray(0, at).toString('utf8')), body: bytes.subarray(at + 8).toString('utf8') };
  };

  it('sends a route’s stream with its status and headers', async () => {
    const answer = await invoke(async () => ({ statusCode: 200, headers: { 'content-type': 'application/json' }, body: Readable.from(['{"result":', '[]}']) }));

    expect(answer).toEqual({ prelude: { statusCode: 200, headers: { 'content-type': 'application/json' } }, body: '{"result":[]}' });
  });

  it('sends an error thrown before the stream as the JSON envelope with its status', async () => {
    const answer = await invoke(async () => {
      throw new NotFoundError('Workspace wks-1 not found.');
    });

    expect(answer.prelude.statusCode).toBe(404);
    expect(JSON.parse(answer.body)).toEqual({ error: { code: 'not_found', message: 'Workspace wks-1 not found.', details: [] }, request_id: 'r-1' });
  });
});
