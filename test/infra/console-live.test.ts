import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { HandlerFunction } from '../../lib/constructs/handler-function';
import { FleetstreamStack } from '../../lib/fleetstream-stack';
import { configFromContext } from '../../lib/stack-config';
import { actionsOf, statementsOfFunction, targetOf } from './template-queries';

const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
const stack = new FleetstreamStack(app, 'Fleetstream', { config: configFromContext(app.node) });
const template = Template.fromStack(stack);
const resources = template.toJSON().Resources as Record<string, { Type: string; Properties: Record<string, any> }>;
const idOf = (construct: { node: { defaultChild?: unknown } }) => stack.getLogicalId(construct.node.defaultChild as never);
const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);
const environmentOf = (fn: HandlerFunction) => resources[idOf(fn)].Properties.Environment?.Variables ?? {};
const authorizerId = () => stack.getLogicalId(stack.consoleLive.authorizer);
const domainId = () => stack.getLogicalId(stack.consoleLive.domain);
const publishers = () =>
  [
    ['connection', stack.consumerFunctions.get('device-mqtt')!],
    ['data', stack.consumerFunctions.get('ingest')!],
    ['rollout', stack.streamFunctions.get('registry-stream')!],
    ['webhook', stack.consumerFunctions.get('forwarder')!],
    ['export', stack.consumerFunctions.get('export')!],
    ['alarm', stack.consumerFunctions.get('alarm-notifier')!],
  ] as const;
const topic = (kind: string) => ({
  'Fn::Join': [
    '',
    [
      'arn:',
      { Ref: 'AWS::Partition' },
      ':iot:',
      { Ref: 'AWS::Region' },
      ':',
      { Ref: 'AWS::AccountId' },
      `:topic/fleetstream/console/wks-${'?'.repeat(20)}/${kind}`,
    ],
  ],
});

describe('the console’s live updates on IoT Core', () => {
  it('has a custom authorizer of its own, the console-authorizer Lambda, without token signing, invokable by IoT Core for it alone', () => {
    const authorizer = resources[authorizerId()];
    const permissions = ofType('AWS::Lambda::Permission')
      .map(([, p]) => p.Properties)
      .filter((p) => targetOf(p.FunctionName) === idOf(stack.consoleAuthorizer));

    expect(authorizer.Properties).toMatchObject({ SigningDisabled: true, Status: 'ACTIVE' });
    expect(targetOf(authorizer.Properties.AuthorizerFunctionArn)).toBe(idOf(stack.consoleAuthorizer));
    expect(permissions).toEqual([expect.objectContaining({ Principal: 'iot.amazonaws.com', SourceArn: { 'Fn::GetAtt': [authorizerId(), 'Arn'] } })]);
  });

  it('makes it the default, not overridable, of a domain for MQTT over WebSocket (MQTT_WSS, CUSTOM_AUTH)', () => {
    expect(resources[domainId()].Properties).toMatchObject({
      ServiceType: 'DATA',
      ApplicationProtocol: 'MQTT_WSS',
      AuthenticationType: 'CUSTOM_AUTH',
      AuthorizerConfig: { DefaultAuthorizerName: { Ref: authorizerId() }, AllowAuthorizerOverride: false },
    });
  });

  it('lets the authorizer read the registry (GetItem) and nothing else but its logs, and tells it the user pool', () => {
    const actions = statementsOfFunction(template, idOf(stack.consoleAuthorizer)).flatMap(actionsOf);

    expect([...new Set(actions)].sort()).toEqual(['dynamodb:GetItem', 'logs:CreateLogStream', 'logs:PutLogEvents']);
    expect(environmentOf(stack.consoleAuthorizer)).toMatchObject({ USER_POOL_ID: expect.anything(), USER_POOL_CLIENT_ID: expect.anything() });
  });

  it('grants each of the six publishers iot:Publish on its kind’s console topic of a workspace (no *), with the data endpoint', () => {
    const publishing = ofType('AWS::Lambda::Function')
      .map(([id]) => id)
      .filter((id) =>
        statementsOfFunction(template, id).some((s) => actionsOf(s).includes('iot:Publish') && JSON.stringify(s.Resource).includes('fleetstream/console')),
      );

    expect(publishing.sort()).toEqual(
      publishers()
        .map(([, fn]) => idOf(fn))
        .sort(),
    );
    for (const [kind, fn] of publishers()) {
      const statements = statementsOfFunction(template, idOf(fn)).filter((s) => JSON.stringify(s.Resource).includes('fleetstream/console'));
      expect(statements).toHaveLength(1);
      expect(actionsOf(statements[0])).toEqual(['iot:Publish']);
      expect(statements[0].Resource).toEqual(topic(kind));
      expect(environmentOf(fn)).toMatchObject({ CONSOLE_LIVE: 'true', AWS_ENDPOINT_URL_IOT_DATA_PLANE: expect.anything() });
    }
  });

  it('names its WebSocket in config.json and allows that origin alone in the console’s connect-src', () => {
    const csp = JSON.stringify(ofType('AWS::CloudFront::ResponseHeadersPolicy')[0][1].Properties);
    const wss = csp.match(/wss:[^ ;"]*/g) ?? [];

    expect(wss).toHaveLength(1);
    expect(csp).toContain(stack.getLogicalId(stack.consoleLive.node.findChild('Endpoints').node.defaultChild as never));
  });
});
