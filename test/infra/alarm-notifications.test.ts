import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { QUEUES } from '../../lambdas/queues';
import { FleetstreamStack } from '../../lib/fleetstream-stack';
import { configFromContext } from '../../lib/stack-config';
import { actionsOf, mentions, statementsOfFunction } from './template-queries';

// Wiring, not code: no bundling, so that the stack synthesizes in seconds.
const synth = (context: Record<string, string> = {}) => {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [], ...context } });
  const stack = new FleetstreamStack(app, 'Fleetstream', { config: configFromContext(app.node) });
  const template = Template.fromStack(stack);
  const idOf = (construct: { node: { defaultChild?: unknown } }) => stack.getLogicalId(construct.node.defaultChild as never);
  const notifier = stack.consumerFunctions.get('alarm-notifier')!;
  const resources = template.toJSON().Resources as Record<string, { Type: string; Properties: Record<string, any> }>;
  return { stack, template, resources, notifierId: idOf(notifier), idOf };
};
const plain = synth();
const withSender = synth({ alarmSender: 'alarms@ops.example.com' });

const sesStatements = (s: ReturnType<typeof synth>) =>
  statementsOfFunction(s.template, s.notifierId).filter((st) => actionsOf(st).some((a) => a.startsWith('ses:')));

describe('the alarm notifications', () => {
  it('are a queue with its DLQ, drained by the alarm-notifier Lambda with partial batch failures', () => {
    const { stack, resources, notifierId, idOf } = plain;
    const { queue, dlq, definition } = stack.queues.queues['alarm-notifications'];
    expect(resources[idOf(queue)].Properties).toMatchObject({
      VisibilityTimeout: definition.visibilityTimeoutSeconds,
      RedrivePolicy: { maxReceiveCount: QUEUES['alarm-notifications'].maxReceiveCount, deadLetterTargetArn: { 'Fn::GetAtt': [idOf(dlq), 'Arn'] } },
    });
    plain.template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: notifierId },
      EventSourceArn: { 'Fn::GetAtt': [idOf(queue), 'Arn'] },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    const env = resources[notifierId].Properties.Environment.Variables;
    expect(env).toMatchObject({
      ALARM_NOTIFICATIONS_QUEUE_URL: { Ref: idOf(queue) },
      ALARM_NOTIFICATIONS_RETRY_BASE_SECONDS: '30',
      ALARM_NOTIFICATIONS_RETRY_MAX_SECONDS: '900',
      ALARM_NOTIFICATIONS_MAX_RECEIVE_COUNT: String(QUEUES['alarm-notifications'].maxReceiveCount),
      ALARM_EMAIL_SENDER: '',
    });
    // It puts the alarm events on the forward queue.
    expect(env.FORWARD_QUEUE_URL).toEqual({ Ref: idOf(stack.queues.queues.forward.queue) });
  });

  it('may read and update registry items by key, and nothing else there', () => {
    const { stack, template, notifierId, idOf } = plain;
    const registryId = idOf(stack.registry.table);
    const registry = statementsOfFunction(template, notifierId).filter((s) => mentions(s.Resource, registryId));
    expect(registry.flatMap(actionsOf).sort()).toEqual(['dynamodb:GetItem', 'dynamodb:UpdateItem']);
  });

  it('may send no e-mail without an alarmSender', () => {
    expect(sesStatements(plain)).toEqual([]);
  });

  it('may send e-mail through SES only from the alarmSender, on its identity', () => {
    const statements = sesStatements(withSender);
    expect(statements).toEqual([
      {
        Effect: 'Allow',
        Action: 'ses:SendEmail',
        Resource: {
          'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':ses:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, ':identity/ops.example.com']],
        },
        Condition: { StringEquals: { 'ses:FromAddress': 'alarms@ops.example.com' } },
      },
    ]);
    expect(withSender.resources[withSender.notifierId].Properties.Environment.Variables.ALARM_EMAIL_SENDER).toBe('alarms@ops.example.com');
    // No other function may use SES.
    for (const fn of [...withSender.stack.routeHandlers.values(), ...withSender.stack.consumerFunctions.values()]) {
      if (fn === withSender.stack.consumerFunctions.get('alarm-notifier')) continue;
      expect(
        statementsOfFunction(withSender.template, withSender.idOf(fn))
          .flatMap(actionsOf)
          .filter((a) => a.startsWith('ses:')),
      ).toEqual([]);
    }
  });

  it('refuses an alarmSender that is not an e-mail address', () => {
    expect(() => synth({ alarmSender: 'not-an-address' })).toThrow(/Context alarmSender="not-an-address" is invalid: expected an e-mail address/);
  });
});
