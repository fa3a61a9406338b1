import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import { Alarm, AlarmStatusWidget, ComparisonOperator, GraphWidget, TreatMissingData, type Dashboard } from 'aws-cdk-lib/aws-cloudwatch';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { FilterCriteria, FilterRule, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { REGISTRY_STREAM, type StreamDefinition } from '../../lambdas/streams';
import type { HandlerFunction } from './handler-function';

export interface RegistryStreamProps {
  /** The registry table; its stream must be on (RegistryTable turns it on, NEW_AND_OLD_IMAGES). */
  readonly table: ITable;
  /** The stream's consumer. */
  readonly consumer: HandlerFunction;
  /** @default REGISTRY_STREAM of lambdas/streams.ts, the settings the local runtime's poller uses */
  readonly definition?: StreamDefinition;
  /** Where the consumer's graphs and alarms go. */
  readonly dashboard?: Dashboard;
  /** What happens to the on-failure queue (and the descriptions in it) when it leaves the stack. @default RETAIN */
  readonly removalPolicy?: RemovalPolicy;
}

const ONE_MINUTE = Duration.minutes(1);
// SQS's maximum: a failed batch's description must outlive the stream's 24-hour retention by far.
const DLQ_RETENTION = Duration.days(14);
// A consumer this far behind the table is stuck or failing: events are late.
const ITERATOR_AGE_ALARM_MS = 5 * 60 * 1000;

/**
 * The registry table's change stream feeding its consumer: a DynamoDB event source that starts at
 * the stream's oldest record (nothing written before the mapping existed is skipped), passes only
 * job and FOTA inserts and updates (filter criteria on the sort key), reports partial batch
 * failures, bisects a failing batch, retries `retryAttempts` times and then sends the batch's
 * description to an SQS on-failure queue (encrypted, TLS only). Alarms on a description in that
 * queue, on the consumer's errors, and on its iterator age.
 */
export class RegistryStream extends Construct {
  readonly dlq: Queue;
  readonly dlqAlarm: Alarm;
  readonly errorsAlarm: Alarm;
  readonly iteratorAgeAlarm: Alarm;

  constructor(scope: Construct, id: string, props: RegistryStreamProps) {
    super(scope, id);
    const definition = props.definition ?? REGISTRY_STREAM;
    const { consumer } = props;
    this.dlq = new Queue(this, 'Dlq', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: DLQ_RETENTION,
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    });
    Validations.of(this.dlq).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason: "It is itself a dead-letter queue: the registry stream event source's on-failure destination.",
    });
    const eventNames = FilterRule.or(...definition.eventNames);
    consumer.addEventSource(
      new DynamoEventSource(props.table, {
        startingPosition: StartingPosition.TRIM_HORIZON,
        batchSize: definition.batchSize,
        maxBatchingWindow: Duration.seconds(definition.maxBatchingWindowSeconds),
        parallelizationFactor: definition.parallelizationFactor,
        bisectBatchOnError: definition.bisectBatchOnError,
        retryAttempts: definition.retryAttempts,
        reportBatchItemFailures: true,
        onFailure: new SqsDlq(this.dlq),
        // Filters are ORed: one per kind of item; other items never invoke the consumer (nor cost an invocation).
        filters: definition.sortKeyPrefixes.map((prefix) =>
          FilterCriteria.filter({ eventName: eventNames, dynamodb: { Keys: { sk: { S: FilterRule.beginsWith(prefix) } } } }),
        ),
      }),
    );

    Validations.of(consumer.role!).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'dynamodb:ListStreams (granted with the stream read by the event source) takes no resource-level permissions; the record actions name the one stream.',
    });
    const alarm = (name: string, description: string, metric: Alarm['metric'], threshold: number) =>
      new Alarm(this, name, {
        alarmDescription: description,
        metric,
        threshold,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
    this.dlqAlarm = alarm(
      'DlqAlarm',
      `Registry changes failed ${definition.retryAttempts} retries: their job/FOTA events were not forwarded. Each message names the shard and sequence numbers; the items are in the table.`,
      this.dlq.metricApproximateNumberOfMessagesVisible({ period: ONE_MINUTE, statistic: 'Maximum' }),
      1,
    );
    this.errorsAlarm = alarm(
      'ErrorsAlarm',
      `The ${consumer.source} Lambda failed whole batches of the registry stream (they are retried, then bisected): see its logs.`,
      consumer.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
      1,
    );
    this.iteratorAgeAlarm = alarm(
      'IteratorAgeAlarm',
      `The ${consumer.source} Lambda is more than 5 minutes behind the registry table: job/FOTA events are late.`,
      consumer.metric('IteratorAge', { period: ONE_MINUTE, statistic: 'Maximum' }),
      ITERATOR_AGE_ALARM_MS,
    );
    props.dashboard?.addWidgets(
      new GraphWidget({
        title: `${consumer.source}: invocations, errors, iterator age (ms)`,
        left: [consumer.metricInvocations({ period: ONE_MINUTE }), consumer.metricErrors({ period: ONE_MINUTE })],
        right: [consumer.metric('IteratorAge', { period: ONE_MINUTE, statistic: 'Maximum' })],
      }),
      new AlarmStatusWidget({ title: 'registry stream alarms', alarms: [this.dlqAlarm, this.errorsAlarm, this.iteratorAgeAlarm] }),
    );
  }
}
