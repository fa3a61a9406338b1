import { App, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { Route } from '../../lambdas/routes';
import { Api } from '../../lib/constructs/api';
import { RegistryTable } from '../../lib/constructs/registry-table';
import { inlineFunction, synthApi } from './api-stack';
import { methodsByRoute, mentions, targetOf } from './template-queries';

// Rows of the kinds other parts add later: a streamed query, a device route, a public document.
const FAKE_ROUTES: Route[] = [
  { method: 'GET', path: '/timeseries/{workspaceId}/data', handler: 'timeseries', operationId: 'queryData', auth: 'api-key', summary: 'Query', stream: true },
  { method: 'GET', path: '/timeseries/{workspaceId}/tags', handler: 'timeseries', operationId: 'listTags', auth: 'api-key', summary: 'Tags' },
  { method: 'POST', path: '/device/data', handler: 'device-api', operationId: 'publish', auth: 'device', summary: 'Publish' },
  { method: 'GET', path: '/openapi.json', handler: 'openapi', operationId: 'getOpenApi', auth: 'none', summary: 'Document' },
];

describe('Api', () => {
  it('streams the integration of a route marked stream, through Lambda’s response-streaming invocation', () => {
    const { template } = synthApi(FAKE_ROUTES);
    const streamed = methodsByRoute(template).get('GET /timeseries/{workspaceId}/data')!;
    expect(streamed.Integration.ResponseTransferMode).toBe('STREAM');
    expect(JSON.stringify(streamed.Integration.Uri)).toContain('/response-streaming-invocations');
  });

  it('keeps the other routes of the same handler buffered', () => {
    const { template } = synthApi(FAKE_ROUTES);
    const buffered = methodsByRoute(template).get('GET /timeseries/{workspaceId}/tags')!;
    expect(buffered.Integration.ResponseTransferMode).toBe('BUFFERED');
    expect(JSON.stringify(buffered.Integration.Uri)).toContain('/invocations');
    expect(JSON.stringify(buffered.Integration.Uri)).not.toContain('response-streaming');
  });

  it('puts device routes behind a second REQUEST authorizer that reads the Authorization header', () => {
    const { template, authorizers, idOf } = synthApi(FAKE_ROUTES);
    const method = methodsByRoute(template).get('POST /device/data')!;
    const authorizer = template.toJSON().Resources[targetOf(method.AuthorizerId)!].Properties;
    expect(method.AuthorizationType).toBe('CUSTOM');
    expect(authorizer).toMatchObject({ Type: 'REQUEST', IdentitySource: 'method.request.header.Authorization', AuthorizerResultTtlInSeconds: 45 });
    expect(mentions(authorizer.AuthorizerUri, idOf(authorizers.device!))).toBe(true);
    template.resourceCountIs('AWS::ApiGateway::Authorizer', 2);
  });

  it('leaves routes with auth none without an authorizer', () => {
    const { template } = synthApi(FAKE_ROUTES);
    const method = methodsByRoute(template).get('GET /openapi.json')!;
    expect(method.AuthorizationType).toBe('NONE');
    expect(method.AuthorizerId).toBeUndefined();
  });

  it('creates only the authorizers the routes use', () => {
    const { template, api } = synthApi(FAKE_ROUTES.filter((r) => r.auth !== 'device'));
    template.resourceCountIs('AWS::ApiGateway::Authorizer', 1);
    expect([...api.authorizers.keys()]).toEqual(['api-key']);
  });

  it('shares one integration, and one Lambda permission for the whole API, between the routes of a handler', () => {
    const { template, handlers, idOf } = synthApi(FAKE_ROUTES);
    const permissions = Object.values(template.findResources('AWS::Lambda::Permission')).filter((p) =>
      mentions(p.Properties.FunctionName, idOf(handlers.get('timeseries')!)),
    );
    // Scoped to the API, not to each method: one permission, whatever the number of routes.
    expect(permissions).toHaveLength(1);
    expect(JSON.stringify(Object.values(permissions)[0].Properties.SourceArn)).toContain('/*/*/*');
  });

  it('throttles each device door method with the device throttle, and every other method with the stage’s default', () => {
    const { template } = synthApi(FAKE_ROUTES);
    const [stage] = Object.values(template.findResources('AWS::ApiGateway::Stage'));

    // A method setting names its resource path with `/` written `~1`.
    expect(stage.Properties.MethodSettings).toEqual([
      { HttpMethod: '*', ResourcePath: '/*', ThrottlingRateLimit: 7, ThrottlingBurstLimit: 9, LoggingLevel: 'ERROR', DataTraceEnabled: false },
      {
        HttpMethod: 'POST',
        ResourcePath: '/~1device~1data',
        ThrottlingRateLimit: 11,
        ThrottlingBurstLimit: 13,
        LoggingLevel: 'ERROR',
        DataTraceEnabled: false,
      },
    ]);
  });

  it('puts a regional WAF web ACL in front of the stage, whose one rule blocks an address over its rate', () => {
    const { template } = synthApi(FAKE_ROUTES);
    const [[aclId, acl]] = Object.entries(template.findResources('AWS::WAFv2::WebACL'));

    expect(acl.Properties).toMatchObject({ Scope: 'REGIONAL', DefaultAction: { Allow: {} } });
    expect(acl.Properties.Rules).toEqual([
      {
        Name: 'PerIpRate',
        Priority: 0,
        Action: { Block: {} },
        // IP: the connection's address; a FORWARDED_IP key would trust what the caller writes in a header.
        Statement: { RateBasedStatement: { AggregateKeyType: 'IP', Limit: 123, EvaluationWindowSec: 120 } },
        VisibilityConfig: { CloudWatchMetricsEnabled: true, SampledRequestsEnabled: true, MetricName: 'PerIpRate' },
      },
    ]);
    const [association] = Object.values(template.findResources('AWS::WAFv2::WebACLAssociation'));
    const [stageId] = Object.keys(template.findResources('AWS::ApiGateway::Stage'));
    const [restApiId] = Object.keys(template.findResources('AWS::ApiGateway::RestApi'));
    expect(association.Properties.WebACLArn).toEqual({ 'Fn::GetAtt': [aclId, 'Arn'] });
    expect(mentions(association.Properties.ResourceArn, stageId)).toBe(true);
    expect(mentions(association.Properties.ResourceArn, restApiId)).toBe(true);
    expect(JSON.stringify(association.Properties.ResourceArn)).toMatch(/:apigateway:.*\/restapis\/.*\/stages\//);
  });

  it('answers a request the firewall blocked 403 forbidden, in the error envelope', () => {
    const { template } = synthApi(FAKE_ROUTES);
    const [filtered] = Object.values(template.findResources('AWS::ApiGateway::GatewayResponse', { Properties: { ResponseType: 'WAF_FILTERED' } }));

    expect(filtered.Properties.StatusCode).toBe('403');
    expect(JSON.parse(filtered.Properties.ResponseTemplates['application/json']).error.code).toBe('forbidden');
  });

  it('refuses a device route when no device authorizer is given', () => {
    expect(() => synthApi(FAKE_ROUTES, false)).toThrow(/needs auth 'device'/);
  });

  it('refuses a route whose handler has no Lambda', () => {
    const stack = new Stack(new App(), 'Broken');
    expect(
      () =>
        new Api(stack, 'Api', {
          routes: FAKE_ROUTES.slice(0, 1),
          handlers: new Map(),
          authorizers: { 'api-key': inlineFunction(stack, 'Authorizer') },
          authorizerCacheTtl: Duration.seconds(30),
          throttleRateLimit: 1,
          throttleBurstLimit: 1,
          deviceThrottleRateLimit: 1,
          deviceThrottleBurstLimit: 1,
          firewallIpRateLimit: 10,
          firewallWindowSeconds: 60,
        }),
    ).toThrow(/handler 'timeseries', which has no Lambda/);
  });
});

describe('RegistryTable', () => {
  it('can be made disposable: deleted with the stack and not deletion-protected', () => {
    const stack = new Stack(new App(), 'TableTest');
    new RegistryTable(stack, 'Registry', { removalPolicy: RemovalPolicy.DESTROY });
    Template.fromStack(stack).hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Delete',
      Properties: { DeletionProtectionEnabled: false },
    });
  });
});
