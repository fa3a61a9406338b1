import { App, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { Code, Function as LambdaFunction, Runtime, type IFunction } from 'aws-cdk-lib/aws-lambda';
import type { Route, RouteHandler } from '../../lambdas/routes';
import { Api, type ApiProps } from '../../lib/constructs/api';

// Inline functions: the tests of the API need nothing bundled.
export const inlineFunction = (stack: Stack, id: string) =>
  new LambdaFunction(stack, id, { runtime: Runtime.NODEJS_22_X, handler: 'index.handler', code: Code.fromInline('exports.handler = async () => ({})') });

/**
 * The Api construct alone, on these routes, with an inline Lambda per handler and authorizer, an
 * authorizer cache of 45 s, throttles of 7/9 (device doors 11/13) and a firewall of 123 per 120 s.
 */
export const synthApi = (routes: readonly Route[], withDeviceAuthorizer = true) => {
  const stack = new Stack(new App(), 'ApiTest');
  const handlers = new Map<RouteHandler, IFunction>([...new Set(routes.map((r) => r.handler))].map((name) => [name, inlineFunction(stack, `${name}Fn`)]));
  const authorizers: ApiProps['authorizers'] = {
    'api-key': inlineFunction(stack, 'ApiKeyAuthorizerFn'),
    ...(withDeviceAuthorizer ? { device: inlineFunction(stack, 'DeviceAuthorizerFn') } : {}),
  };
  const api = new Api(stack, 'Api', {
    routes,
    handlers,
    authorizers,
    authorizerCacheTtl: Duration.seconds(45),
    throttleRateLimit: 7,
    throttleBurstLimit: 9,
    deviceThrottleRateLimit: 11,
    deviceThrottleBurstLimit: 13,
    firewallIpRateLimit: 123,
    firewallWindowSeconds: 120,
    logRemovalPolicy: RemovalPolicy.DESTROY,
  });
  const template = Template.fromStack(stack);
  const idOf = (fn: IFunction) => stack.getLogicalId(fn.node.defaultChild as never);
  return { api, template, handlers, authorizers, idOf };
};
