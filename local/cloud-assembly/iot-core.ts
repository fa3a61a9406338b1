import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { BrokerRule } from '../mqtt-broker';
import { parseRuleSql, type RuleStatement } from './iot-sql';
import { functionsIn, resourcesOfType, targetOf, type CfnTemplate } from './template';

/**
 * The template's AWS IoT Core resources, as the cloud-assembly runtime runs them on the local
 * broker: the custom authorizer a domain configuration names, the topic rules (their SQL, SQS
 * actions and error action, each sent with the rule's role), and a local IoT control plane that
 * answers what the stack's custom resource asks (the domain's name and the data endpoint).
 */

/** IoT Core's port for MQTT over TLS: what a template writes into the devices' broker address. */
export const IOT_CORE_MQTTS_PORT = 8883;

/** The custom authorizer devices meet at CONNECT, and its function. */
export interface IotAuthorizerSpec {
  id: string;
  functionId: string;
  /** Why IoT Core could not use it (an inactive authorizer), if so. */
  unusable?: string;
}

/**
 * The authorizer of the devices' door: the default authorizer of the template's CUSTOM_AUTH domain
 * configuration, or the template's only authorizer. Undefined when the template has none.
 * @throws Error for what does not run here (token signing) or names no function of the template
 */
export const iotAuthorizerOf = (template: CfnTemplate): IotAuthorizerSpec | undefined => {
  const authorizers = resourcesOfType(template, 'AWS::IoT::Authorizer');
  if (!authorizers.length) return undefined;
  // The devices' domain (the console's MQTT over WebSocket one has an authorizer of its own: consoleAuthorizerOf).
  const domain = resourcesOfType(template, 'AWS::IoT::DomainConfiguration').find(
    ([, d]) => d.Properties?.AuthenticationType === 'CUSTOM_AUTH' && d.Properties?.ApplicationProtocol !== 'MQTT_WSS',
  );
  const id = domain ? targetOf(domain[1].Properties?.AuthorizerConfig?.DefaultAuthorizerName) : authorizers.length === 1 ? authorizers[0][0] : undefined;
  if (!id || template.Resources[id]?.Type !== 'AWS::IoT::Authorizer') {
    throw new Error(
      domain
        ? `Domain configuration ${domain[0]} names no authorizer of the template as its default.`
        : 'The template has several IoT authorizers and no domain configuration choosing one.',
    );
  }
  return authorizerSpecOf(template, id);
};

/**
 * An authorizer of the template as the broker runs it.
 * @throws Error for token signing, or an authorizer that names no function of the template
 */
const authorizerSpecOf = (template: CfnTemplate, id: string): IotAuthorizerSpec => {
  const props = template.Resources[id].Properties ?? {};
  // With signing enabled IoT Core checks a token signature before calling the Lambda: not emulated.
  if (props.SigningDisabled !== true) throw new Error(`IoT authorizer ${id}: token signing (SigningDisabled false) does not run here.`);
  const [functionId] = functionsIn(template, props.AuthorizerFunctionArn);
  if (!functionId) throw new Error(`IoT authorizer ${id} names no function of the template.`);
  return { id, functionId, ...(props.Status === 'ACTIVE' ? {} : { unusable: `authorizer ${id} is ${props.Status ?? 'INACTIVE'}` }) };
};

/** Whether a domain configuration is the consoles' door: MQTT over WebSocket with a custom authorizer. */
export const isConsoleDomain = (domain: { Properties?: Record<string, any> }) =>
  domain.Properties?.ApplicationProtocol === 'MQTT_WSS' && domain.Properties?.AuthenticationType === 'CUSTOM_AUTH';

/**
 * The authorizer of the consoles' door: the default authorizer of the template's `MQTT_WSS` +
 * `CUSTOM_AUTH` domain configuration (lib/constructs/console-live.ts), which the broker's WebSocket
 * listener asks at each CONNECT. Undefined when the template has no such domain.
 * @throws Error for a domain naming no authorizer of the template, or one that does not run here
 */
export const consoleAuthorizerOf = (template: CfnTemplate): IotAuthorizerSpec | undefined => {
  const domain = resourcesOfType(template, 'AWS::IoT::DomainConfiguration').find(([, d]) => isConsoleDomain(d));
  if (!domain) return undefined;
  const id = targetOf(domain[1].Properties?.AuthorizerConfig?.DefaultAuthorizerName);
  if (!id || template.Resources[id]?.Type !== 'AWS::IoT::Authorizer')
    throw new Error(`Domain configuration ${domain[0]} (MQTT_WSS) names no authorizer of the template as its default.`);
  return authorizerSpecOf(template, id);
};

/** A rule's SQS action: where it sends, with which role, and whether it base64-encodes the message. */
export interface SqsActionSpec {
  queueUrl: string;
  roleId: string;
  useBase64: boolean;
}

/** A topic rule of the template, read and checked. */
export interface TopicRuleSpec {
  id: string;
  name: string;
  statement: RuleStatement;
  actions: SqsActionSpec[];
  errorAction?: SqsActionSpec;
}

/** Whether a role's trust policy lets a service assume it. */
const trusts = (role: Record<string, any> | undefined, service: string) =>
  [role?.Properties?.AssumeRolePolicyDocument?.Statement ?? []]
    .flat()
    .some(
      (s: { Effect: string; Action: string | string[]; Principal?: { Service?: string | string[] } }) =>
        s.Effect === 'Allow' && [s.Action].flat().includes('sts:AssumeRole') && [s.Principal?.Service ?? []].flat().includes(service),
    );

/**
 * The enabled topic rules of a template, their values resolved.
 * @throws Error for SQL outside the supported subset, an action that is not SQS, or a role IoT Core
 * may not assume (CreateTopicRule refuses it)
 */
export const topicRulesOf = (template: CfnTemplate, resolve: (value: unknown) => any): TopicRuleSpec[] =>
  resourcesOfType(template, 'AWS::IoT::TopicRule')
    .filter(([, rule]) => rule.Properties?.TopicRulePayload?.RuleDisabled !== true)
    .map(([id, rule]) => {
      const payload = rule.Properties!.TopicRulePayload;
      const sqsOf = (action: Record<string, any>, where: string): SqsActionSpec => {
        const kinds = Object.keys(action);
        if (kinds.length !== 1 || kinds[0] !== 'Sqs')
          throw new Error(`Topic rule ${id}: the ${where} ${kinds.join(', ')} does not run here (SQS actions only).`);
        const roleId = targetOf(action.Sqs.RoleArn);
        if (!roleId || template.Resources[roleId]?.Type !== 'AWS::IAM::Role')
          throw new Error(`Topic rule ${id}: the ${where}'s role is not a role of the template.`);
        if (!trusts(template.Resources[roleId], 'iot.amazonaws.com'))
          throw new Error(`Topic rule ${id}: iot.amazonaws.com may not assume ${roleId} (its trust policy does not allow it): CreateTopicRule refuses this.`);
        return { queueUrl: String(resolve(action.Sqs.QueueUrl)), roleId, useBase64: action.Sqs.UseBase64 === true };
      };
      return {
        id,
        name: String(resolve(rule.Properties!.RuleName ?? id)),
        statement: parseRuleSql(payload.Sql, payload.AwsIotSqlVersion),
        actions: (payload.Actions ?? []).map((a: Record<string, any>) => sqsOf(a, 'action')),
        ...(payload.ErrorAction ? { errorAction: sqsOf(payload.ErrorAction, 'error action') } : {}),
      };
    });

/**
 * A topic rule as the broker runs it: a publish its WHERE does not hold for is left alone; else the
 * SELECT's result is sent by each action (with `send`, which uses the action's role); when an action fails, IoT Core's error-action message (rule, topic,
 * client, original payload, each failure) goes to the error action. A publish the SQL cannot
 * evaluate is dropped and logged, as IoT Core drops it.
 * https://docs.aws.amazon.com/iot/latest/developerguide/rule-error-handling.html
 */
export const brokerRuleOf = (spec: TopicRuleSpec, send: (action: SqsActionSpec, body: string) => Promise<void>, log: (line: string) => void): BrokerRule => {
  const bodyOf = (action: SqsActionSpec, message: unknown) => {
    const json = JSON.stringify(message);
    return action.useBase64 ? Buffer.from(json).toString('base64') : json;
  };
  return {
    topicFilter: spec.statement.topicFilter,
    run: async ({ topic, payload, receivedAt, clientId }) => {
      if (!spec.statement.where({ topic, payload, receivedAt, clientId })) return;
      let message: Record<string, unknown>;
      try {
        message = spec.statement.select({ topic, payload, receivedAt, clientId });
      } catch (error) {
        log(`topic rule ${spec.name}: ${(error as Error).message}; dropped`);
        return;
      }
      const failures: Array<{ failedAction: string; failedResource: string; errorMessage: string }> = [];
      await Promise.all(
        spec.actions.map((action) =>
          send(action, bodyOf(action, message)).catch((error: Error) => {
            failures.push({
              failedAction: 'SqsAction',
              failedResource: action.queueUrl,
              errorMessage: `Failed to send a message to the queue: ${error.name}: ${error.message}`,
            });
          }),
        ),
      );
      if (!failures.length) return;
      if (!spec.errorAction) {
        log(`topic rule ${spec.name}: ${failures.map((f) => f.errorMessage).join('; ')} (no error action)`);
        return;
      }
      const errorMessage = {
        ruleName: spec.name,
        topic,
        cloudwatchTraceId: randomUUID(),
        clientId,
        base64OriginalPayload: payload.toString('base64'),
        failures,
      };
      await send(spec.errorAction, bodyOf(spec.errorAction, errorMessage)).catch((error: Error) => {
        log(`topic rule ${spec.name}: the error action failed too (${error.name}: ${error.message}); the message is lost, as on IoT Core`);
      });
    },
  };
};

/** What the local IoT control plane answers about the account's endpoints. */
export interface IotEndpoints {
  /** The domain name of each domain configuration, by its name. */
  domains: Record<string, { arn: string; domainName: string; serviceType?: string }>;
  /** `iot:Data-ATS`: where functions publish to devices. */
  dataEndpoint: string;
}

/**
 * A local stand-in for the IoT control plane's two read operations the stack's custom resource
 * makes (`DescribeEndpoint`, `DescribeDomainConfiguration`), in the REST JSON shape the SDK reads.
 * Functions reach it only through their IAM proxy.
 */
export const startIotControlPlane = async (endpoints: IotEndpoints): Promise<{ url: string; stop: () => Promise<void> }> => {
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const answer = (status: number, body: unknown, errorType?: string) => {
      res.writeHead(status, { 'content-type': 'application/json', ...(errorType ? { 'x-amzn-errortype': errorType } : {}) }).end(JSON.stringify(body));
    };
    if (req.method === 'GET' && url.pathname === '/endpoint') {
      const type = url.searchParams.get('endpointType') ?? 'iot:Data';
      if (type !== 'iot:Data-ATS') return answer(400, { message: `endpoint type ${type} is not served here (iot:Data-ATS only)` }, 'InvalidRequestException');
      return answer(200, { endpointAddress: endpoints.dataEndpoint });
    }
    const domain = /^\/domainConfigurations\/([^/]+)$/.exec(url.pathname)?.[1];
    const known = domain === undefined ? undefined : endpoints.domains[decodeURIComponent(domain)];
    if (req.method === 'GET' && known) {
      return answer(200, {
        domainConfigurationName: decodeURIComponent(domain!),
        domainConfigurationArn: known.arn,
        domainName: known.domainName,
        serviceType: known.serviceType ?? 'DATA',
        domainConfigurationStatus: 'ENABLED',
        domainType: 'AWS_MANAGED',
      });
    }
    answer(404, { message: `${req.method} ${url.pathname}: no such resource here` }, 'ResourceNotFoundException');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
};
