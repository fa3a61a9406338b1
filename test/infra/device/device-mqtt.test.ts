import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { HandlerFunction } from '../../../lib/constructs/handler-function';
import { FleetstreamStack } from '../../../lib/fleetstream-stack';
import { configFromContext } from '../../../lib/stack-config';
import { MQTT_RULES } from '../../../lambdas/mqtt-rules';
import { AMAZON_ROOT_CA_1 } from '../../../lib/amazon-root-ca-1';
import { actionsOf, statementsOfFunction, targetOf } from '../template-queries';

const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
const stack = new FleetstreamStack(app, 'Fleetstream', { config: configFromContext(app.node) });
const template = Template.fromStack(stack);
const resources = template.toJSON().Resources as Record<string, { Type: string; Properties: Record<string, any> }>;
const idOf = (construct: { node: { defaultChild?: unknown } }) => stack.getLogicalId(construct.node.defaultChild as never);
const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);
const environmentOf = (fn: HandlerFunction) => resources[idOf(fn)].Properties.Environment?.Variables ?? {};
const mqttQueue = () => stack.getLogicalId(stack.queues.queues.mqtt.queue.node.defaultChild as never);
const mqttDlq = () => stack.getLogicalId(stack.queues.queues.mqtt.dlq.node.defaultChild as never);
const ingestQueue = () => stack.getLogicalId(stack.queues.queues.ingest.queue.node.defaultChild as never);
const ingestDlq = () => stack.getLogicalId(stack.queues.queues.ingest.dlq.node.defaultChild as never);
const authorizerId = () => stack.getLogicalId(stack.deviceMqtt.authorizer);

describe('the MQTT door on IoT Core', () => {
  it('has one custom authorizer, the mqtt-authorizer Lambda, with no token signing, invokable by IoT Core for it alone', () => {
    const authorizer = resources[authorizerId()];
    const permission = ofType('AWS::Lambda::Permission')
      .map(([, p]) => p.Properties)
      .find((p) => p.Principal === 'iot.amazonaws.com' && targetOf(p.FunctionName) === idOf(stack.mqttAuthorizer))!;

    // the devices' and the console's (test/infra/console-live.test.ts)
    expect(ofType('AWS::IoT::Authorizer').map(([id]) => id)).toEqual([authorizerId(), stack.getLogicalId(stack.consoleLive.authorizer)]);
    expect(authorizer.Properties).toMatchObject({ SigningDisabled: true, Status: 'ACTIVE' });
    expect(targetOf(authorizer.Properties.AuthorizerFunctionArn)).toBe(idOf(stack.mqttAuthorizer));
    expect(targetOf(permission.FunctionName)).toBe(idOf(stack.mqttAuthorizer));
    expect(permission.SourceArn).toEqual({ 'Fn::GetAtt': [authorizerId(), 'Arn'] });
  });

  it('makes it the default authorizer of a domain for MQTT over TLS without ALPN (SECURE_MQTT, CUSTOM_AUTH)', () => {
    const [[, domain]] = ofType('AWS::IoT::DomainConfiguration');

    expect(domain.Properties).toMatchObject({
      ServiceType: 'DATA',
      ApplicationProtocol: 'SECURE_MQTT',
      AuthenticationType: 'CUSTOM_AUTH',
      AuthorizerConfig: { DefaultAuthorizerName: { Ref: authorizerId() }, AllowAuthorizerOverride: false },
    });
    expect(domain.Properties.DomainName).toBeUndefined(); // an AWS-managed domain: Amazon Root CA 1 signs it
  });

  it('has one topic rule per row of lambdas/mqtt-rules.ts, sending to its queue (data to the ingest queue) with that queue’s DLQ as error action', () => {
    const rules = ofType('AWS::IoT::TopicRule').map(([, r]) => r.Properties.TopicRulePayload);
    const queues = { ingest: [ingestQueue(), ingestDlq()], mqtt: [mqttQueue(), mqttDlq()] };

    expect(rules.map((r) => r.Sql).sort()).toEqual(MQTT_RULES.map((r) => r.sql).sort());
    expect(MQTT_RULES.find((r) => r.topicFilter === 'j/data/+/+')?.queue).toBe('ingest');
    for (const rule of rules) {
      const [queue, dlq] = queues[MQTT_RULES.find((r) => r.sql === rule.Sql)!.queue];
      expect(rule).toMatchObject({ AwsIotSqlVersion: '2016-03-23', RuleDisabled: false });
      expect(rule.Actions).toEqual([{ Sqs: expect.objectContaining({ QueueUrl: { Ref: queue }, UseBase64: false }) }]);
      expect(rule.ErrorAction).toEqual({ Sqs: expect.objectContaining({ QueueUrl: { Ref: dlq } }) });
    }
  });

  it('takes a device’s publish (j/data, j/up) only from the client the topic names: clientid() selected and required to match', () => {
    const sqlOf = (filter: string) =>
      ofType('AWS::IoT::TopicRule')
        .map(([, r]) => r.Properties.TopicRulePayload.Sql as string)
        .find((sql) => sql.includes(`FROM '${filter}'`))!;

    for (const filter of ['j/data/+/+', 'j/up/+']) {
      expect(sqlOf(filter)).toMatch(/\bclientid\(\) AS client_id\b/);
      expect(sqlOf(filter)).toMatch(/ WHERE clientid\(\) = topic\(3\)$/);
    }
  });

  it('sends on the lifecycle events of devices alone (client ID dev-…), not the consoles’ (console-…, over WebSocket)', () => {
    const presence = ofType('AWS::IoT::TopicRule')
      .map(([, r]) => r.Properties.TopicRulePayload.Sql as string)
      .filter((sql) => sql.includes("FROM '$aws/events/presence/"));

    expect(presence).toEqual([expect.stringMatching(/ FROM '\$aws\/events\/presence\/\+\/\+' WHERE startswith\(topic\(5\), 'dev-'\)$/)]);
  });

  it('lets the rules’ role only send to the rules’ queues and their DLQs', () => {
    const roleId = targetOf(ofType('AWS::IoT::TopicRule')[0][1].Properties.TopicRulePayload.Actions[0].Sqs.RoleArn)!;
    const statements = ofType('AWS::IAM::Policy')
      .filter(([, p]) => p.Properties.Roles.some((r: unknown) => targetOf(r) === roleId))
      .flatMap(([, p]) => p.Properties.PolicyDocument.Statement);

    expect(resources[roleId].Properties.AssumeRolePolicyDocument.Statement[0].Principal).toEqual({ Service: 'iot.amazonaws.com' });
    expect(statements.flatMap(actionsOf).every((a: string) => /^sqs:(SendMessage|GetQueueAttributes|GetQueueUrl)$/.test(a))).toBe(true);
    expect(statements.flatMap((s) => [s.Resource].flat().map(targetOf)).sort()).toEqual([mqttDlq(), mqttQueue(), ingestQueue(), ingestDlq()].sort());
  });

  it('lets the registry stream’s consumer (jobs and FOTA) and device-mqtt Lambdas publish only to the devices’ j/dn topics, at the account’s data endpoint', () => {
    const publishers = [stack.streamFunctions.get('registry-stream')!, stack.consumerFunctions.get('device-mqtt')!];
    for (const fn of publishers) {
      // (their publishes to the consoles' topics: test/infra/console-live.test.ts)
      const iot = statementsOfFunction(template, idOf(fn)).filter(
        (s) => actionsOf(s).some((a) => a.startsWith('iot:')) && !JSON.stringify(s.Resource).includes('fleetstream/console'),
      );
      expect(iot.flatMap(actionsOf)).toEqual(['iot:Publish']);
      expect(JSON.stringify(iot[0].Resource)).toContain(':topic/j/dn/*');
      expect(environmentOf(fn)).toMatchObject({ MQTT_LIVE_DELIVERY: 'true', AWS_ENDPOINT_URL_IOT_DATA_PLANE: expect.anything() });
      expect(JSON.stringify(environmentOf(fn).AWS_ENDPOINT_URL_IOT_DATA_PLANE)).toContain('DataEndpoint');
    }
    const closers = [stack.routeHandlers.get('identities'), stack.routeHandlers.get('devices')];
    const others = [...stack.routeHandlers.values()].filter((fn) => !publishers.includes(fn) && !closers.includes(fn));
    for (const fn of others)
      expect(
        statementsOfFunction(template, idOf(fn))
          .flatMap(actionsOf)
          .some((a) => a.startsWith('iot:')),
      ).toBe(false);
  });

  it.each(['identities', 'devices'] as const)(
    'lets the %s Lambda close devices’ connections (revoking, deleting), DeleteConnection on the devices’ client IDs only, at the account’s data endpoint',
    (name) => {
      const fn = stack.routeHandlers.get(name)!;
      const iot = statementsOfFunction(template, idOf(fn)).filter((s) => actionsOf(s).some((a) => a.startsWith('iot:')));

      expect(iot.flatMap(actionsOf)).toEqual(['iot:DeleteConnection']);
      expect(iot[0].Effect).toBe('Allow');
      // arn:<partition>:iot:<region>:<account>:client/dev-<20 characters>: a device's client ID, nothing else.
      expect(iot[0].Resource).toEqual({
        'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':iot:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, `:client/dev-${'?'.repeat(20)}`]],
      });
      expect(environmentOf(fn)).toMatchObject({ MQTT_SESSION_CLOSE: 'true', AWS_ENDPOINT_URL_IOT_DATA_PLANE: expect.anything() });
      expect(JSON.stringify(environmentOf(fn).AWS_ENDPOINT_URL_IOT_DATA_PLANE)).toContain('DataEndpoint');
    },
  );

  it('lets the MQTT authorizer read single registry items, claim a device’s sampled authentication minute, and send authentication events, nothing more', () => {
    const actions = statementsOfFunction(template, idOf(stack.mqttAuthorizer)).flatMap(actionsOf);

    expect(actions.filter((a) => a.startsWith('dynamodb:'))).toEqual(['dynamodb:GetItem', 'dynamodb:UpdateItem']);
    expect(actions.every((a) => a.startsWith('dynamodb:') || a.startsWith('sqs:SendMessage') || /^sqs:GetQueue/.test(a) || a.startsWith('logs:'))).toBe(true);
  });

  it('writes the broker (port 8883, TLS) and Amazon Root CA 1 into device credentials', () => {
    const env = environmentOf(stack.routeHandlers.get('identities')!);

    expect(JSON.stringify(env.DEVICE_MQTT_URL)).toMatch(/mqtts:\/\/.*DomainName.*:8883/);
    expect(env.DEVICE_MQTT_CACERT).toBe(AMAZON_ROOT_CA_1);
    expect(AMAZON_ROOT_CA_1).toMatch(/^-----BEGIN CERTIFICATE-----\nMIIDQTCCAimgAwIBAgITBmyfz5m\/jAo54vB4ikPmljZbyjANBgkqhkiG9w0BAQsF/);
  });

  it('feeds the device-mqtt Lambda from the MQTT queue in small batches without a window, with partial batch responses', () => {
    const consumer = stack.consumerFunctions.get('device-mqtt')!;
    const [, mapping] = ofType('AWS::Lambda::EventSourceMapping').find(([, r]) => targetOf(r.Properties.FunctionName) === idOf(consumer))!;

    expect(mapping.Properties).toMatchObject({
      EventSourceArn: { 'Fn::GetAtt': [mqttQueue(), 'Arn'] },
      BatchSize: 10,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
  });
});
