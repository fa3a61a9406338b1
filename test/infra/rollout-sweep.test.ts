import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { ROLLOUT_SWEEP, rateExpressionOf } from '../../lambdas/schedules';
import { INDEX_SHARDS, REGISTRY_SWEEP_INDEX } from '../../lambdas/stores/keys';
import { REGISTRY_WARM_WRITES_PER_SECOND } from '../../lib/constructs/registry-table';
import { FleetstreamStack } from '../../lib/fleetstream-stack';
import { configFromContext } from '../../lib/stack-config';
import { actionsOf, statementsOfFunction, targetOf } from './template-queries';

// Wiring, not code: no bundling, so that the stack synthesizes in seconds.
const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
const stack = new FleetstreamStack(app, 'Fleetstream', { config: configFromContext(app.node) });
const template = Template.fromStack(stack);
const resources = template.toJSON().Resources as Record<string, { Type: string; Properties: Record<string, any> }>;
const idOf = (construct: { node: { defaultChild?: unknown } }) => stack.getLogicalId(construct.node.defaultChild as never);
const tableId = () => idOf(stack.registry.table);
const sweep = () => stack.scheduledFunctions.get('rollout-sweep')!;
const sweepId = () => idOf(sweep());
const ruleId = () => idOf(stack.schedules.get('rollout-sweep')!.rule);
const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);
const tableArn = () => ({ 'Fn::GetAtt': [tableId(), 'Arn'] });
const indexArn = (name: string) => ({ 'Fn::Join': ['', [tableArn(), `/index/${name}`]] });

describe('the registry’s sweep index', () => {
  it('is a keys-only global secondary index on two string attributes, as lambdas/stores/keys.ts defines it (due work and rollouts’ devices share it: one index entry per item)', () => {
    const table = resources[tableId()].Properties;

    expect(table.GlobalSecondaryIndexes).toContainEqual({
      IndexName: REGISTRY_SWEEP_INDEX.name,
      KeySchema: [
        { AttributeName: REGISTRY_SWEEP_INDEX.partitionKey, KeyType: 'HASH' },
        { AttributeName: REGISTRY_SWEEP_INDEX.sortKey, KeyType: 'RANGE' },
      ],
      Projection: { ProjectionType: 'KEYS_ONLY' },
      WarmThroughput: { WriteUnitsPerSecond: REGISTRY_WARM_WRITES_PER_SECOND },
    });
    expect(table.AttributeDefinitions).toEqual(
      expect.arrayContaining([
        { AttributeName: REGISTRY_SWEEP_INDEX.partitionKey, AttributeType: 'S' },
        { AttributeName: REGISTRY_SWEEP_INDEX.sortKey, AttributeType: 'S' },
      ]),
    );
  });

  it('is pre-warmed for writes as the table is, and a fleet-wide scheduling’s entries spread over 16 partitions: a hot index would throttle its writes', () => {
    const table = resources[tableId()].Properties;

    for (const index of table.GlobalSecondaryIndexes) expect(index.WarmThroughput).toEqual(table.WarmThroughput);
    // 10,000 items/s over 16 partitions of ~1,000 writes/s each.
    expect(INDEX_SHARDS * 1000).toBeGreaterThan(REGISTRY_WARM_WRITES_PER_SECOND);
  });

  it('may be queried by the sweep, the rollouts’ routes (a rollout’s devices) and the alarms’ (the alarms not closed) only: no other function’s statement names it', () => {
    const naming = ofType('AWS::IAM::Policy')
      .filter(([, p]) => JSON.stringify(p.Properties.PolicyDocument).includes(`/index/${REGISTRY_SWEEP_INDEX.name}"`))
      .flatMap(([, p]) => p.Properties.Roles.map(targetOf));
    const routes = [stack.routeHandlers.get('rollouts')!, stack.routeHandlers.get('alarms')!];

    expect(naming.sort()).toEqual([sweepId(), ...routes.map(idOf)].map((id) => targetOf(resources[id].Properties.Role)).sort());
    for (const route of routes) {
      const indexStatements = statementsOfFunction(template, idOf(route)).filter((s) => JSON.stringify(s.Resource).includes('/index/'));
      expect(indexStatements).toEqual([{ Effect: 'Allow', Action: 'dynamodb:Query', Resource: indexArn(REGISTRY_SWEEP_INDEX.name) }]);
    }
  });
});

describe('the rollout sweep', () => {
  it(`runs on an EventBridge rule, ${rateExpressionOf(ROLLOUT_SWEEP)}, on the default bus, enabled`, () => {
    const rule = resources[ruleId()].Properties;

    expect(rule.ScheduleExpression).toBe('rate(1 minute)');
    expect(rule.ScheduleExpression).toBe(rateExpressionOf(ROLLOUT_SWEEP));
    expect(rule).toMatchObject({ State: 'ENABLED' });
    expect(rule.EventPattern).toBeUndefined();
    expect(rule.EventBusName).toBeUndefined();
  });

  it('targets the sweep function alone, and neither EventBridge nor Lambda retries a run (the next minute’s does the work)', () => {
    const rule = resources[ruleId()].Properties;
    const [[, invokeConfig]] = ofType('AWS::Lambda::EventInvokeConfig').filter(([, c]) => c.Properties.FunctionName.Ref === sweepId());

    expect(rule.Targets).toEqual([
      { Id: expect.any(String), Arn: { 'Fn::GetAtt': [sweepId(), 'Arn'] }, RetryPolicy: { MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 60 } },
    ]);
    expect(invokeConfig.Properties).toMatchObject({ MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 60 });
  });

  it('may be invoked by EventBridge for this rule only', () => {
    const permissions = ofType('AWS::Lambda::Permission').filter(([, p]) => JSON.stringify(p.Properties.FunctionName).includes(`"${sweepId()}"`));

    expect(permissions.map(([, p]) => p.Properties)).toEqual([
      {
        Action: 'lambda:InvokeFunction',
        FunctionName: { 'Fn::GetAtt': [sweepId(), 'Arn'] },
        Principal: 'events.amazonaws.com',
        SourceArn: { 'Fn::GetAtt': [ruleId(), 'Arn'] },
      },
    ]);
  });

  it(`has a ${ROLLOUT_SWEEP.timeoutSeconds} s timeout, the registry table’s name, and its own handler folder`, () => {
    const fn = resources[sweepId()].Properties;

    expect(fn.Timeout).toBe(ROLLOUT_SWEEP.timeoutSeconds);
    expect(fn.Environment.Variables.REGISTRY_TABLE).toEqual({ Ref: tableId() });
    expect(sweep().source).toBe('rollout-sweep');
  });

  it('may read (a state rollout’s device, due alarm timers in batches), query and write one item at a time on the registry table (alarm transitions in transactions), query the sweep index, and nothing else there (no batch writes)', () => {
    const dynamo = statementsOfFunction(template, sweepId()).filter((s) => actionsOf(s).some((a) => a.startsWith('dynamodb:')));

    expect(dynamo).toEqual([
      {
        Effect: 'Allow',
        Action: [
          'dynamodb:GetItem',
          'dynamodb:BatchGetItem',
          'dynamodb:Query',
          'dynamodb:PutItem',
          'dynamodb:UpdateItem',
          'dynamodb:DeleteItem',
          'dynamodb:ConditionCheckItem',
        ],
        Resource: [tableArn()],
      },
      { Effect: 'Allow', Action: 'dynamodb:Query', Resource: indexArn(REGISTRY_SWEEP_INDEX.name) },
    ]);
  });

  it('may send to the alarm notifications queue (the transitions of the alarms it opens and closes), and to no other queue', () => {
    const sqs = statementsOfFunction(template, sweepId()).filter((s) => actionsOf(s).some((a) => a.startsWith('sqs:')));

    expect(sqs.map((s) => s.Resource)).toEqual([{ 'Fn::GetAtt': [idOf(stack.queues.queues['alarm-notifications'].queue), 'Arn'] }]);
    expect(sqs.flatMap(actionsOf).every((a) => ['sqs:SendMessage', 'sqs:GetQueueAttributes', 'sqs:GetQueueUrl'].includes(a))).toBe(true);
  });

  it('alarms when runs fail three minutes in a row', () => {
    const alarm = resources[idOf(stack.schedules.get('rollout-sweep')!.errorsAlarm)].Properties;

    expect(alarm).toMatchObject({
      MetricName: 'Errors',
      Namespace: 'AWS/Lambda',
      Period: 60,
      EvaluationPeriods: 3,
      Threshold: 1,
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: sweepId() } }],
    });
  });

  it('names its rule in an output (the local runtimes find it so; an operator disables it to pause the sweep)', () => {
    expect(template.toJSON().Outputs.RolloutSweepRuleName.Value).toEqual({ Ref: ruleId() });
  });
});
