import type { APIGatewayProxyEvent, Context } from 'aws-lambda';

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
