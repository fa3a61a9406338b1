import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { DynamoDBRecord } from 'aws-lambda';
import { REGISTRY_STREAM } from '../../../lambdas/streams';
import { REGISTRY_WARM_WRITES_PER_SECOND } from '../../../lib/constructs/registry-table';
import { alarmTimerKey, fotaKey, jobKey, deviceKey, deviceLocatorKey } from '../../../lambdas/stores/keys';
import { FleetstreamStack } from '../../../lib/fleetstream-stack';
import { configFromContext } from '../../../lib/stack-config';
import { streamFilterOf } from '../../../local/dynamodb-stream-poller';
import { actionsOf, statementsOfFunction } from '../template-queries';

// These assertions are about wiring, not code: skip esbuild bundling to synthesize in seconds.
const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
const stack = new FleetstreamStack(app, 'Fleetstream', { config: configFromContext(app.node) });
const template = Template.fromStack(stack);
const resources = template.toJSON().Resources as Record<string, { Type: string; Properties: Record<string, any> }>;
const idOf = (construct: { node: { defaultChild?: unknown } }) => stack.getLogicalId(construct.node.defaultChild as never);
const consumer = () => stack.streamFunctions.get('registry-stream')!;
const tableId = () => idOf(stack.registry.table);
const mapping = () => Object.values(resources).find((r) => r.Type === 'AWS::Lambda::EventSourceMapping' && r.Properties.FunctionName.Ref === idOf(consumer()))!;

/** Lambda's filter semantics for the patterns the stack uses: lists of values, and `prefix` matches. */
const matchesPattern = (pattern: unknown, value: unknown): boolean => {
  if (Array.isArray(pattern))
    return pattern.some((p) => (typeof p === 'object' && p !== null && 'prefix' in p ? typeof value === 'string' && value.startsWith(p.prefix) : p === value));
  if (typeof pattern === 'object' && pattern !== null) {
    return Object.entries(pattern).every(([key, sub]) => matchesPattern(sub, (value as Record<string, unknown> | undefined)?.[key]));
  }
  return false;
};

const record = (eventName: DynamoDBRecord['eventName'], key: { pk: string; sk: string }): DynamoDBRecord => ({
  eventName,
  dynamodb: { Keys: { pk: { S: key.pk }, sk: { S: key.sk } }, SequenceNumber: '1' },
});

describe('registry stream', () => {
  it('turns on the registry table’s stream with old and new images', () => {
    expect(resources[tableId()].Properties.StreamSpecification).toEqual({ StreamViewType: 'NEW_AND_OLD_IMAGES' });
  });

  it('pre-warms the registry table for a fleet-wide job’s writes: 100,000 job items in about 10 s, reads at the on-demand default', () => {
    expect(resources[tableId()].Properties.WarmThroughput).toEqual({ WriteUnitsPerSecond: REGISTRY_WARM_WRITES_PER_SECOND });
    // A new on-demand table serves 4,000 write units/s at once: 25 s for 100,000 items of ≤ 1 KB.
    expect(100_000 / REGISTRY_WARM_WRITES_PER_SECOND).toBeLessThanOrEqual(10);
  });

  it('runs parallelizationFactor batches of a shard at once, without a batching window, in batches of up to batchSize', () => {
    expect(mapping().Properties).toMatchObject({
      ParallelizationFactor: REGISTRY_STREAM.parallelizationFactor,
      MaximumBatchingWindowInSeconds: 0,
      BatchSize: REGISTRY_STREAM.batchSize,
    });
    expect(REGISTRY_STREAM.parallelizationFactor).toBeGreaterThan(1);
  });

  it('feeds the stream to its consumer with the settings of lambdas/streams.ts, partial failures, bisecting and an on-failure queue', () => {
    expect(mapping().Properties).toMatchObject({
      EventSourceArn: { 'Fn::GetAtt': [tableId(), 'StreamArn'] },
      StartingPosition: 'TRIM_HORIZON',
      BatchSize: REGISTRY_STREAM.batchSize,
      MaximumBatchingWindowInSeconds: REGISTRY_STREAM.maxBatchingWindowSeconds,
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: REGISTRY_STREAM.retryAttempts,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [idOf(stack.registryStream.dlq), 'Arn'] } } },
    });
    expect(resources[idOf(consumer())].Properties.Timeout).toBe(REGISTRY_STREAM.consumerTimeoutSeconds);
  });

  it('lets only job, FOTA, device and condition inserts and updates invoke it, exactly as the local poller’s filter does', () => {
    const patterns = (mapping().Properties.FilterCriteria.Filters as Array<{ Pattern: string }>).map((f) => JSON.parse(f.Pattern));
    const cloud = (r: DynamoDBRecord) => patterns.some((p) => matchesPattern(p, r));
    const local = streamFilterOf(REGISTRY_STREAM);
    const cases: Array<[DynamoDBRecord, boolean]> = [
      [record('INSERT', jobKey('dev-1', 'reboot')), true],
      [record('MODIFY', jobKey('dev-1', 'reboot')), true],
      [record('INSERT', fotaKey('dev-1')), true],
      [record('MODIFY', fotaKey('dev-1')), true],
      [record('REMOVE', jobKey('dev-1', 'reboot')), false],
      // Devices created, moved or re-tagged join the continuous rollouts they match.
      [record('INSERT', deviceKey('wks-1', 'dev-1')), true],
      [record('MODIFY', deviceKey('wks-1', 'dev-1')), true],
      [record('REMOVE', deviceKey('wks-1', 'dev-1')), false],
      [record('MODIFY', deviceLocatorKey('dev-1')), false],
      [record('INSERT', { pk: 'WKS#wks-1', sk: 'TAG#site#5#milan#dev-1' }), false],
      // Conditions opened and closed start and end their alarm rules' timers; the timers themselves are not watched.
      [record('INSERT', { pk: 'WKS#wks-1', sk: 'COND#2026-01-01T00:00:00.000000Z#dev-1#u1' }), true],
      [record('MODIFY', { pk: 'WKS#wks-1', sk: 'COND#2026-01-01T00:00:00.000000Z#dev-1#u1' }), true],
      [record('INSERT', alarmTimerKey('dev-1', 'alr-1')), false],
    ];

    for (const [r, expected] of cases) {
      expect({ key: r.dynamodb!.Keys, event: r.eventName, cloud: cloud(r), local: local(r) }).toEqual({
        key: r.dynamodb!.Keys,
        event: r.eventName,
        cloud: expected,
        local: expected,
      });
    }
  });

  it('lets the consumer read the stream, read and write items on the table (rollout counts, alarm timers and transitions: no index), send to the forward queue, the alarm notifications queue and the on-failure queue, publish on j/dn and the consoles’ rollout topic, presign firmware downloads, and nothing else', () => {
    const statements = statementsOfFunction(template, idOf(consumer())).filter((s) => !actionsOf(s).every((a) => a.startsWith('logs:')));
    const byResource = statements.map((s) => ({ actions: actionsOf(s).sort(), resource: JSON.stringify(s.Resource) }));

    expect(byResource).toEqual(
      expect.arrayContaining([
        {
          actions: [
            'dynamodb:BatchGetItem',
            'dynamodb:BatchWriteItem',
            'dynamodb:ConditionCheckItem',
            'dynamodb:DeleteItem',
            'dynamodb:GetItem',
            'dynamodb:PutItem',
            'dynamodb:Query',
            'dynamodb:UpdateItem',
          ],
          resource: JSON.stringify([{ 'Fn::GetAtt': [tableId(), 'Arn'] }]),
        },
        {
          actions: ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator'],
          resource: JSON.stringify({ 'Fn::GetAtt': [tableId(), 'StreamArn'] }),
        },
        { actions: ['dynamodb:ListStreams'], resource: '"*"' },
        { actions: ['iot:Publish'], resource: expect.stringContaining(':topic/j/dn/*') },
        // the consoles' live rollout counts (docs/console.md, "Live updates"): that kind's topic only
        { actions: ['iot:Publish'], resource: expect.stringContaining(':topic/fleetstream/console/wks-????????????????????/rollout') },
        // A presigned GET is authorized as its signer when a device uses it.
        { actions: ['s3:GetObject'], resource: JSON.stringify({ 'Fn::Join': ['', [{ 'Fn::GetAtt': [idOf(stack.buckets.buckets.firmware), 'Arn'] }, '/*']] }) },
      ]),
    );
    const sqsTargets = statements.filter((s) => actionsOf(s).some((a) => a.startsWith('sqs:'))).map((s) => JSON.stringify(s.Resource));
    expect(sqsTargets.sort()).toEqual(
      [
        JSON.stringify({ 'Fn::GetAtt': [idOf(stack.registryStream.dlq), 'Arn'] }),
        JSON.stringify({ 'Fn::GetAtt': [idOf(stack.queues.queues.forward.queue), 'Arn'] }),
        JSON.stringify({ 'Fn::GetAtt': [idOf(stack.queues.queues['alarm-notifications'].queue), 'Arn'] }),
      ].sort(),
    );
    expect(
      statements
        .flatMap(actionsOf)
        .filter((a) => a.startsWith('sqs:'))
        .every((a) => ['sqs:SendMessage', 'sqs:GetQueueAttributes', 'sqs:GetQueueUrl'].includes(a)),
    ).toBe(true);
    expect(byResource).toHaveLength(9);
  });

  it('no longer lets the jobs and fota handlers send to the forward queue: they only write', () => {
    for (const name of ['jobs', 'fota'] as const) {
      const fn = stack.routeHandlers.get(name)!;
      expect(
        statementsOfFunction(template, idOf(fn))
          .flatMap(actionsOf)
          .filter((a) => a.startsWith('sqs:')),
      ).toEqual([]);
      expect(resources[idOf(fn)].Properties.Environment.Variables.FORWARD_QUEUE_URL).toBeUndefined();
    }
  });

  it('encrypts the on-failure queue, keeps descriptions 14 days, retains it, and outputs its URL', () => {
    const dlq = template.toJSON().Resources[idOf(stack.registryStream.dlq)];

    expect(dlq.Properties).toMatchObject({ SqsManagedSseEnabled: true, MessageRetentionPeriod: 14 * 24 * 3600 });
    expect(dlq.DeletionPolicy).toBe('Retain');
    expect(template.toJSON().Outputs.RegistryStreamDlqUrl.Value).toEqual({ Ref: idOf(stack.registryStream.dlq) });
  });

  it('alarms on a description in the on-failure queue, on the consumer’s errors and on its iterator age', () => {
    const { dlqAlarm, errorsAlarm, iteratorAgeAlarm } = stack.registryStream;
    const props = (alarm: typeof dlqAlarm) => resources[idOf(alarm)].Properties;

    expect(props(dlqAlarm)).toMatchObject({
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [idOf(stack.registryStream.dlq), 'QueueName'] } }],
      Threshold: 1,
    });
    expect(props(errorsAlarm)).toMatchObject({ MetricName: 'Errors', Dimensions: [{ Name: 'FunctionName', Value: { Ref: idOf(consumer()) } }], Threshold: 1 });
    expect(props(iteratorAgeAlarm)).toMatchObject({ MetricName: 'IteratorAge', Statistic: 'Maximum', Threshold: 5 * 60 * 1000 });
  });
});
