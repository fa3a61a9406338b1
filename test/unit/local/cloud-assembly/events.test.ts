import { rateIntervalMs, scheduledRulesOf } from '../../../../local/cloud-assembly/events';
import type { CfnTemplate } from '../../../../local/cloud-assembly/template';

/** A template with the stack's kind of rule: rate(1 minute) on one function, as CDK writes it. */
const template = (change: (rule: Record<string, any>, t: CfnTemplate) => void = () => undefined): CfnTemplate => {
  const t: CfnTemplate = {
    Resources: {
      Sweep: { Type: 'AWS::Lambda::Function', Properties: {} },
      Queue: { Type: 'AWS::SQS::Queue', Properties: {} },
      Rule: {
        Type: 'AWS::Events::Rule',
        Properties: {
          Description: 'the sweep',
          ScheduleExpression: 'rate(1 minute)',
          State: 'ENABLED',
          Targets: [{ Id: 'Target0', Arn: { 'Fn::GetAtt': ['Sweep', 'Arn'] }, RetryPolicy: { MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 60 } }],
        },
      },
    },
  };
  change(t.Resources.Rule.Properties!, t);
  return t;
};

describe('rateIntervalMs (EventBridge rate expressions)', () => {
  it.each([
    ['rate(1 minute)', 60_000],
    ['rate(5 minutes)', 300_000],
    ['rate(1 hour)', 3_600_000],
    ['rate(2 hours)', 7_200_000],
    ['rate(1 day)', 86_400_000],
    ['rate(7 days)', 604_800_000],
  ])('reads %s as %i ms', (expression, ms) => {
    expect(rateIntervalMs(expression)).toBe(ms);
  });

  it.each([
    ['rate(1 minutes)', /singular for 1/],
    ['rate(5 minute)', /plural otherwise/],
    ['rate(0 minutes)', /is not a rate expression/],
    ['rate(30 seconds)', /is not a rate expression/],
    ['rate(1.5 hours)', /is not a rate expression/],
    ['cron(0/5 * * * ? *)', /cron expressions do not run here/],
  ])('refuses %s as EventBridge would, or as the runtime cannot honour', (expression, message) => {
    expect(() => rateIntervalMs(expression)).toThrow(message);
  });
});

describe('scheduledRulesOf', () => {
  it('reads a scheduled rule with its interval and its function target', () => {
    expect(scheduledRulesOf(template())).toEqual([
      { id: 'Rule', expression: 'rate(1 minute)', intervalMs: 60_000, enabled: true, targets: [{ id: 'Target0', functionId: 'Sweep' }] },
    ]);
  });

  it('keeps a disabled rule, which never fires, and a target’s constant input', () => {
    const [rule] = scheduledRulesOf(
      template((r) => {
        r.State = 'DISABLED';
        r.Targets[0].Input = '{"dryRun":true}';
      }),
    );

    expect([rule.enabled, rule.targets[0].input]).toEqual([false, { dryRun: true }]);
  });

  it.each([
    ['an event pattern', (r: Record<string, any>) => (r.EventPattern = { source: ['aws.s3'] }), /Rule Rule: event patterns do not run here/],
    [
      'a cron expression',
      (r: Record<string, any>) => (r.ScheduleExpression = 'cron(0 12 * * ? *)'),
      /Rule Rule: cron\(0 12 \* \* \? \*\): cron expressions do not run here/,
    ],
    ['a custom bus', (r: Record<string, any>) => (r.EventBusName = 'fleet'), /EventBusName "fleet" does not run here/],
    [
      'a queue target',
      (r: Record<string, any>) => (r.Targets[0].Arn = { 'Fn::GetAtt': ['Queue', 'Arn'] }),
      /target Target0: .*Queue.* is not a Lambda function of the template/,
    ],
    [
      'an input transformer',
      (r: Record<string, any>) => (r.Targets[0].InputTransformer = { InputTemplate: '{}' }),
      /target Target0: InputTransformer does not run here/,
    ],
    [
      'an unknown state',
      (r: Record<string, any>) => (r.State = 'ENABLED_WITH_ALL_CLOUDTRAIL_MANAGEMENT_EVENTS'),
      /State ENABLED_WITH_ALL_CLOUDTRAIL_MANAGEMENT_EVENTS does not run here/,
    ],
  ])('refuses %s, naming the rule', (_what, change, message) => {
    expect(() => scheduledRulesOf(template(change))).toThrow(message);
  });
});
