import type { Stage } from 'aws-cdk-lib/aws-apigateway';
import { CfnWebACL, CfnWebACLAssociation } from 'aws-cdk-lib/aws-wafv2';
import { Construct } from 'constructs';

/** The name of the web ACL's per-IP rate rule, and of its CloudWatch metric (namespace AWS/WAFV2). */
export const IP_RATE_RULE = 'PerIpRate';

/** The web ACL's own metric name (its allowed and blocked requests). */
export const FIREWALL_METRIC = 'FleetstreamApi';

export interface ApiFirewallProps {
  /** The API stage the web ACL is associated with. */
  readonly stage: Stage;
  /** Requests one address may send within the window before WAF blocks it (WAF takes 10 and more). */
  readonly ipRateLimit: number;
  /** The rule's evaluation window in seconds: 60, 120, 300 or 600. */
  readonly windowSeconds: number;
}

/**
 * A WAF web ACL (regional) associated with the API stage, the outermost throttle: a rate-based
 * rule counts each source address's requests over the window and blocks the address while it is
 * over the limit, before API Gateway's method throttles and the authorizers see its requests. WAF
 * takes the address of the connection, never `X-Forwarded-For` (aggregate key `IP`), so a caller
 * cannot pass as another address. A blocked request is answered by the stage's WAF_FILTERED
 * gateway response (403, lib/constructs/api.ts).
 */
export class ApiFirewall extends Construct {
  readonly webAcl: CfnWebACL;
  readonly association: CfnWebACLAssociation;

  constructor(scope: Construct, id: string, props: ApiFirewallProps) {
    super(scope, id);
    const visibility = (metricName: string): CfnWebACL.VisibilityConfigProperty => ({
      cloudWatchMetricsEnabled: true,
      sampledRequestsEnabled: true,
      metricName,
    });
    this.webAcl = new CfnWebACL(this, 'WebAcl', {
      scope: 'REGIONAL',
      description: 'Fleetstream API: a rate per source address, so that one address cannot spend the throttles of every caller',
      defaultAction: { allow: {} },
      visibilityConfig: visibility(FIREWALL_METRIC),
      rules: [
        {
          name: IP_RATE_RULE,
          priority: 0,
          action: { block: {} },
          statement: { rateBasedStatement: { aggregateKeyType: 'IP', limit: props.ipRateLimit, evaluationWindowSec: props.windowSeconds } },
          visibilityConfig: visibility(IP_RATE_RULE),
        },
      ],
    });
    // The stage's ARN names the stage resource (its Ref), so the association follows the stage.
    this.association = new CfnWebACLAssociation(this, 'StageAssociation', { resourceArn: props.stage.stageArn, webAclArn: this.webAcl.attrArn });
  }
}
