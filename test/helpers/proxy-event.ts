import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { isStreamingHandler, ResponseStream } from '../../local/lambda-streaming';

/**
 * A REST proxy event as API Gateway hands it to a handler: the raw body text (null when none) and
 * the authorizer's context, no path or query parameters (the handler's router finds them).
 *
 * @example await handler(proxyEvent('POST', '/device/data', '{"tag":"t","payload":1}', self), lambdaContext)
 */
export const proxyEvent = (method: string, path: string, body: string | null, authorizer: object | null): APIGatewayProxyEvent =>
  ({
    httpMethod: method,
    path,
    resource: path,
    headers: { 'Content-Type': 'application/json' },
    body,
    isBase64Encoded: false,
    pathParameters: null,
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    requestContext: { requestId: 'test', authorizer },
  }) as unknown as APIGatewayProxyEvent;

/** The little of a Lambda context the handlers read. */
export const lambdaContext = { awsRequestId: 'test' } as Context;

/**
 * Calls an API handler as API Gateway does, whichever way it answers: a buffered one returns its
 * result; a streaming one (awslambda.streamifyResponse) writes a prelude, eight zero bytes and the
 * body, which come back here as one result. Install the `awslambda` global
 * (`installAwsLambdaGlobal` in local/lambda-streaming.ts) before the handler loads.
 *
 * @example const { statusCode, body } = await invokeApi(handler, proxyEvent('GET', '/workspaces', null, owner));
 */
export const invokeApi = async (handler: unknown, event: APIGatewayProxyEvent, context: Context = lambdaContext): Promise<APIGatewayProxyResult> => {
  if (!isStreamingHandler(handler)) return (handler as (e: APIGatewayProxyEvent, c: Context) => Promise<APIGatewayProxyResult>)(event, context);
  const stream = new ResponseStream();
  const chunks: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk));
  const ended = new Promise((resolve) => stream.once('end', resolve));
  await handler(event, stream, context);
  await ended;
  const bytes = Buffer.concat(chunks);
  const at = bytes.indexOf(Buffer.alloc(8));
  const prelude = JSON.parse(bytes.subarray(0, at).toString('utf8')) as { statusCode: number; headers?: Record<string, string> };
  return { statusCode: prelude.statusCode, headers: prelude.headers, body: bytes.subarray(at + 8).toString('utf8') };
};
