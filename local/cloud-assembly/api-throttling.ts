import type { IpRateRule, StageThrottle } from '../api-gateway-throttling';
import { resourcesOfType, targetOf, type CfnResource, type CfnTemplate } from './template';

/** A stage's throttles as its method settings say: the default (`/*\/*`), and methods' own, keyed `METHOD /path`. */
export interface StageThrottles {
  throttle: StageThrottle | undefined;
  methodThrottles: Record<string, StageThrottle>;
}

/**
 * A method setting's resource path as a route's path: `/~1device~1data` is `/device/data` (a
 * leading slash, then the path with each `/` written `~1` and each `~` written `~0`).
 */
const routePathOf = (resourcePath: string) => (resourcePath === '/' ? '/' : resourcePath.slice(1).replaceAll('~1', '/').replaceAll('~0', '~'));

/**
 * The throttles of a stage's MethodSettings: the entry on every resource and method (`/*`, `*`)
 * is the default each method has a bucket of; an entry on one method (or `*` on one resource)
 * replaces it there, and takes from it what it leaves out.
 */
export const stageThrottlesOf = (stage: CfnResource | undefined): StageThrottles => {
  const settings = (stage?.Properties?.MethodSettings ?? []) as Array<Record<string, unknown>>;
  const number = (value: unknown) => (value === undefined ? undefined : Number(value));
  const everything = settings.find((m) => m.ResourcePath === '/*' && m.HttpMethod === '*');
  const rateLimit = number(everything?.ThrottlingRateLimit);
  const burstLimit = number(everything?.ThrottlingBurstLimit);
  const throttle = rateLimit !== undefined && burstLimit !== undefined ? { rateLimit, burstLimit } : undefined;
  const methodThrottles: Record<string, StageThrottle> = {};
  for (const setting of settings) {
    if (setting === everything) continue;
    const rate = number(setting.ThrottlingRateLimit) ?? throttle?.rateLimit;
    const burst = number(setting.ThrottlingBurstLimit) ?? throttle?.burstLimit;
    if (rate === undefined || burst === undefined) continue;
    methodThrottles[`${setting.HttpMethod} ${routePathOf(String(setting.ResourcePath))}`] = { rateLimit: rate, burstLimit: burst };
  }
  return { throttle, methodThrottles };
};

/**
 * The per-IP rate of the WAF web ACL associated with the stage, as the local gateway runs it: the
 * first rate-based rule (by priority) that blocks by source address (`IP`) and has no scope-down
 * statement. Anything else of the web ACL is logged as not run here.
 */
export const firewallOf = (template: CfnTemplate, stageId: string | undefined, log: (line: string) => void): IpRateRule | undefined => {
  if (!stageId) return undefined;
  const associations = resourcesOfType(template, 'AWS::WAFv2::WebACLAssociation').filter(([, association]) =>
    JSON.stringify(association.Properties?.ResourceArn).includes(`"${stageId}"`),
  );
  const rules: IpRateRule[] = [];
  for (const [, association] of associations) {
    const aclId = targetOf(association.Properties?.WebACLArn);
    const acl = aclId ? template.Resources[aclId] : undefined;
    if (acl?.Type !== 'AWS::WAFv2::WebACL') continue;
    if (!acl.Properties?.DefaultAction?.Allow) log(`WAF web ACL ${aclId}: a default action other than Allow is not run here`);
    const byPriority = [...((acl.Properties?.Rules ?? []) as Array<Record<string, any>>)].sort((a, b) => a.Priority - b.Priority);
    for (const rule of byPriority) {
      const rate = rule.Statement?.RateBasedStatement;
      if (rate && (rate.AggregateKeyType ?? 'IP') === 'IP' && !rate.ScopeDownStatement && rule.Action?.Block) {
        rules.push({ limit: Number(rate.Limit), windowSeconds: Number(rate.EvaluationWindowSec ?? 300) });
      } else log(`WAF web ACL ${aclId}: rule ${rule.Name} is not run here (only a per-IP rate that blocks)`);
    }
  }
  if (rules.length > 1) log(`WAF: ${rules.length} per-IP rates on the stage; only the first is run here`);
  return rules[0];
};
