import type { Route } from '../../lambdas/routes';
import { firewallOf, stageThrottlesOf } from '../../local/cloud-assembly/api-throttling';
import type { CfnTemplate } from '../../local/cloud-assembly/template';
import { synthApi } from './api-stack';

const ROUTES: Route[] = [
  { method: 'GET', path: '/workspaces', handler: 'workspaces', operationId: 'listWorkspaces', auth: 'api-key', summary: 'List' },
  { method: 'POST', path: '/device/data', handler: 'device-api', operationId: 'publish', auth: 'device', summary: 'Publish' },
  { method: 'POST', path: '/device/jobs/{jobName}/result', handler: 'device-api', operationId: 'result', auth: 'device', summary: 'Result' },
];

const synthesized = (): CfnTemplate => synthApi(ROUTES).template.toJSON() as CfnTemplate;

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
