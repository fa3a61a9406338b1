import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ROUTE_HANDLER_TIMEOUT_SECONDS } from '../lambdas/routes';
import { lambdaContext } from './lambda-invoke';
import { isStreamingHandler, relayStreamingInvocation } from './lambda-streaming';
import type { GatewayAnswer } from './api-gateway-responses';
import type { GatewayRoute } from './api-gateway-routing';
import { withInvocation } from './request-counter';

/** A Lambda proxy handler, as the gateway calls it. */
export type ApiHandler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;

/** The request's headers as the proxy event carries them: the last value of each, and all of them. */
export const requestHeaders = (req: IncomingMessage) => {
  const headers: Record<string, string> = {};
  const multiValueHeaders: Record<string, string[]> = {};
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const [name, value] = [req.rawHeaders[i], req.rawHeaders[i + 1]];
    headers[name] = value;
    (multiValueHeaders[name] ??= []).push(value);
  }
  return { headers, multiValueHeaders };
};

/** What the gateway knows of a request once it is routed, authorized and read. */
export interface RoutedRequest {
  req: IncomingMessage;
  requestId: string;
  stage: string;
  route: GatewayRoute;
  method: string;
  /** The path below the stage, still percent-encoded. */
  path: string;
  /** The path with its stage, as `requestContext.path`. */
  fullPath: string;
  pathParameters: Record<string, string>;
  /** The decoded query parameters, in order. */
  query: ReadonlyArray<[string, string]>;
  headers: Record<string, string>;
  multiValueHeaders: Record<string, string[]>;
  authorizer: Record<string, unknown> | undefined;
  body: Buffer;
}

/** The proxy integration's event for a routed request, as API Gateway REST builds it. */
export const proxyEvent = (request: RoutedRequest): APIGatewayProxyEvent => {
  const { route, method, requestId } = request;
  // Without a prototype, a parameter named `__proto__` is a parameter like any other, as in the
  // JSON event API Gateway sends.
  const query: Record<string, string> = Object.create(null);
  const multiQuery: Record<string, string[]> = Object.create(null);
  for (const [key, value] of request.query) {
    query[key] = value;
    (multiQuery[key] ??= []).push(value);
  }
  // As API Gateway REST: `path` stays percent-encoded; path and query parameters are decoded.
  return {
    resource: route.path,
    path: request.path,
    httpMethod: method,
    headers: request.headers,
    multiValueHeaders: request.multiValueHeaders,
    queryStringParameters: Object.keys(query).length ? query : null,
    multiValueQueryStringParameters: Object.keys(multiQuery).length ? multiQuery : null,
    pathParameters: Object.keys(request.pathParameters).length ? request.pathParameters : null,
    stageVariables: null,
    requestContext: {
      requestId,
      stage: request.stage,
      resourcePath: route.path,
      httpMethod: method,
      path: request.fullPath,
      authorizer: request.authorizer,
      identity: { sourceIp: request.req.socket.remoteAddress ?? '127.0.0.1' },
    },
    body: request.body.length ? request.body.toString('utf8') : null,
    isBase64Encoded: false,
  } as unknown as APIGatewayProxyEvent;
};

/**
 * The proxy integration: loads the route's handler, invokes it with the event and writes its
 * answer back (relayed as it comes for a streamed route); a handler that fails is a 502.
 */
export const proxyIntegration =
  (loadHandler: (name: string) => Promise<ApiHandler>, answer: GatewayAnswer) =>
  async (route: GatewayRoute, event: APIGatewayProxyEvent, res: ServerResponse, requestId: string) => {
    let result: APIGatewayProxyResult;
    try {
      const handler = await loadHandler(route.handler);
      // The function's timeout as the stack sets it (lambdas/routes.ts), counted down by getRemainingTimeInMillis.
      const timeoutMs = 1000 * ROUTE_HANDLER_TIMEOUT_SECONDS[route.stream ? 'streamed' : 'buffered'];
      if (route.stream && isStreamingHandler(handler)) {
        return await relayStreamingInvocation(
          handler,
          event,
          lambdaContext({ functionName: route.handler, requestId, timeoutMs }),
          res,
          { 'x-amzn-requestid': requestId },
          (error) => {
            console.error(`handler ${route.handler} crashed`, error);
            answer(res, 'DEFAULT_5XX', 502, 'internal_error', 'The handler failed; retry later.', requestId);
          },
        );
      }
      result = await withInvocation(route.handler, () => handler(event, lambdaContext({ functionName: route.handler, requestId, timeoutMs })));
    } catch (error) {
      console.error(`handler ${route.handler} crashed`, error);
      return answer(res, 'DEFAULT_5XX', 502, 'internal_error', 'The handler failed; retry later.', requestId);
    }
    const outHeaders = { ...result.headers, 'x-amzn-requestid': requestId } as Record<string, string>;
    res.writeHead(result.statusCode, outHeaders);
    res.end(result.isBase64Encoded ? Buffer.from(result.body, 'base64') : result.body);
  };
