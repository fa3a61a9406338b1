import { App, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { Code, Function as LambdaFunction, Runtime } from 'aws-cdk-lib/aws-lambda';
import type { Route, RouteHandler } from '../../lambdas/routes';
import { firewallOf, stageThrottlesOf } from '../../local/cloud-assembly/api-throttling';
import type { CfnTemplate } from '../../local/cloud-assembly/template';
import { Api } from '../../lib/constructs/api';

const ROUTES: Route[] = [
  { method: 'GET', path: '/workspaces', handler: 'workspaces', operationId: 'listWorkspaces', auth: 'api-key', summary: 'List' },
  { method: 'POST', path: '/device/data', handler: 'device-api', operationId: 'publish', auth: 'device', summary: 'Publish' },
  { method: 'POST', path: '/device/jobs/{jobName}/result', handler: 'device-api', operationId: 'result', auth: 'device', summary: 'Result' },
];

/** The template of the stack's Api construct with these throttles and this firewall. */
const synthesized = (): CfnTemplate => {
  const stack = new Stack(new App(), 'ApiThrottling');
  const fn = (id: string) =>
    new LambdaFunction(stack, id, { runtime: Runtime.NODEJS_22_X, handler: 'index.handler', code: Code.fromInline('exports.handler = 1') });
  new Api(stack, 'Api', {
    routes: ROUTES,
    handlers: new Map<RouteHandler, LambdaFunction>([
      ['workspaces', fn('Workspaces')],
      ['device-api', fn('DeviceApi')],
    ]),
    authorizers: { 'api-key': fn('ApiKeyAuthorizer'), device: fn('DeviceAuthorizer') },
    authorizerCacheTtl: Duration.seconds(30),
    throttleRateLimit: 7,
    throttleBurstLimit: 9,
    deviceThrottleRateLimit: 11,
    deviceThrottleBurstLimit: 13,
    firewallIpRateLimit: 123,
    firewallWindowSeconds: 120,
    logRemovalPolicy: RemovalPolicy.DESTROY,
  });
  return Template.fromStack(stack).toJSON() as CfnTemplate;
};

const stageOf = (template: CfnTemplate) => Object.entries(template.Resources).find(([, r]) => r.Type === 'AWS::ApiGateway::Stage')!;

describe('the cloud-assembly gateway’s throttles, read from the template', () => {
  const template = synthesized();

  it('reads the stage’s default method throttle and each device door method’s own, by the route’s path', () => {
    const [, stage] = stageOf(template);

    expect(stageThrottlesOf(stage)).toEqual({
      throttle: { rateLimit: 7, burstLimit: 9 },
      methodThrottles: {
        'POST /device/data': { rateLimit: 11, burstLimit: 13 },
        'POST /device/jobs/{jobName}/result': { rateLimit: 11, burstLimit: 13 },
      },
    });
  });

  it('reads the per-IP rate of the web ACL associated with the stage', () => {
    const [stageId] = stageOf(template);
    const log: string[] = [];

    expect(firewallOf(template, stageId, (line) => log.push(line))).toEqual({ limit: 123, windowSeconds: 120 });
    expect(log).toEqual([]);
  });

  it('runs no firewall for a stage no web ACL is associated with, and says which rules it does not run', () => {
    const log: string[] = [];
    const [stageId] = stageOf(template);
    const other = structuredClone(template);
    const acl = Object.values(other.Resources).find((r) => r.Type === 'AWS::WAFv2::WebACL')!;
    acl.Properties!.Rules.push({ Name: 'Managed', Priority: 1, Statement: { ManagedRuleGroupStatement: {} }, OverrideAction: { None: {} } });

    expect(firewallOf(template, 'NoSuchStage', (line) => log.push(line))).toBeUndefined();
    expect(firewallOf(other, stageId, (line) => log.push(line))).toEqual({ limit: 123, windowSeconds: 120 });
    expect(log).toEqual([expect.stringContaining('rule Managed is not run here')]);
  });
});
