import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { Alarm, AlarmStatusWidget, ComparisonOperator, Dashboard, GraphWidget, TreatMissingData, type IMetric } from 'aws-cdk-lib/aws-cloudwatch';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { QUEUES, type QueueDefinition, type QueueName } from '../../lambdas/queues';
import type { HandlerFunction } from './handler-function';
import { pascalCase } from '../names';

/** One queue of the stack with its dead-letter queue and the definition it was built from. */
export interface StackQueue {
  readonly definition: QueueDefinition;
  readonly queue: Queue;
  readonly dlq: Queue;
  /** Alarms when a message lands in the DLQ. */
  readonly dlqAlarm: Alarm;
}

export interface QueuesProps {
  /** @default QUEUES of lambdas/queues.ts, the same rows the local runtime uses */
  readonly definitions?: Record<QueueName, QueueDefinition>;
  /** What happens to the queues (and the messages in them) when they leave the stack. @default RETAIN */
  readonly removalPolicy?: RemovalPolicy;
}

// SQS's default: far longer than any queue's retry schedule (about 75 minutes for forward), so a
// message is dead-lettered, never dropped, and then waits in the DLQ for dlqRetentionDays.
const QUEUE_RETENTION = Duration.days(4);
const ONE_MINUTE = Duration.minutes(1);

/**
 * The system's SQS queues, built from the queue table that the local runtime also reads: each
 * with a DLQ (redrive after maxReceiveCount), SSE-SQS encryption and TLS-only access, an alarm on
 * DLQ depth, and a CloudWatch dashboard of depths, ages and consumers. `consume` attaches a
 * consumer Lambda with the definition's batch size and window and ReportBatchItemFailures;
 * `allowSend` lets a Lambda put messages on a queue.
 */
export class Queues extends Construct {
  readonly queues: Readonly<Record<QueueName, StackQueue>>;
  readonly dashboard: Dashboard;
  /** Alarms on the consumers' errors (failed invocations), by queue. */
  readonly consumerAlarms = new Map<QueueName, Alarm>();

  constructor(scope: Construct, id: string, props: QueuesProps = {}) {
    super(scope, id);
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    const definitions = props.definitions ?? QUEUES;
    this.dashboard = new Dashboard(this, 'Dashboard');

    const build = (definition: QueueDefinition): StackQueue => {
      const name = pascalCase(definition.name);
      const common = { encryption: QueueEncryption.SQS_MANAGED, enforceSSL: true, removalPolicy };
      const dlq = new Queue(this, `${name}Dlq`, { ...common, retentionPeriod: Duration.days(definition.dlqRetentionDays) });
      const queue = new Queue(this, `${name}Queue`, {
        ...common,
        retentionPeriod: QUEUE_RETENTION,
        visibilityTimeout: Duration.seconds(definition.visibilityTimeoutSeconds),
        deadLetterQueue: { queue: dlq, maxReceiveCount: definition.maxReceiveCount },
      });
      const dlqAlarm = new Alarm(this, `${name}DlqAlarm`, {
        alarmDescription: `Messages of the ${definition.name} queue failed ${definition.maxReceiveCount} times and wait in its DLQ: fix the cause, then npm run replay-dlq.`,
        metric: dlq.metricApproximateNumberOfMessagesVisible({ period: ONE_MINUTE, statistic: 'Maximum' }),
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
      this.dashboard.addWidgets(
        new GraphWidget({
          title: `${definition.name} queue`,
          left: [
            queue.metricApproximateNumberOfMessagesVisible({ period: ONE_MINUTE, label: 'waiting' }),
            queue.metricApproximateNumberOfMessagesNotVisible({ period: ONE_MINUTE, label: 'in flight' }),
            dlq.metricApproximateNumberOfMessagesVisible({ period: ONE_MINUTE, label: 'in the DLQ' }),
          ],
          right: [queue.metricApproximateAgeOfOldestMessage({ period: ONE_MINUTE, label: 'oldest (s)' })],
        }),
      );
      return { definition, queue, dlq, dlqAlarm };
    };
    this.queues = Object.fromEntries(Object.values(definitions).map((d) => [d.name, build(d)])) as Record<QueueName, StackQueue>;
  }

  /**
   * Makes `fn` the consumer of a queue: an event source mapping with the definition's batch size
   * and batching window that reports partial batch failures, the right to receive, delete and
   * change visibility, the queue's URL (and retry backoff, if any) in its environment, an alarm
   * on its errors, and its graphs on the dashboard.
   * @throws Error when the queue's visibility timeout is shorter than the function's timeout (a
   * batch still running would be delivered again).
   */
  consume(name: QueueName, fn: HandlerFunction): this {
    const { definition, queue, dlqAlarm } = this.queues[name];
    const timeout = fn.timeout?.toSeconds() ?? 3;
    if (definition.visibilityTimeoutSeconds < timeout) {
      throw new Error(
        `The ${name} queue's visibility timeout (${definition.visibilityTimeoutSeconds} s) is shorter than ${fn.source}'s timeout (${timeout} s).`,
      );
    }
    fn.bindQueue(queue, definition.urlEnv, 'consume');
    if (definition.retry) {
      const prefix = definition.urlEnv.replace(/_QUEUE_URL$/, '');
      fn.addEnvironment(`${prefix}_RETRY_BASE_SECONDS`, String(definition.retry.baseSeconds));
      fn.addEnvironment(`${prefix}_RETRY_MAX_SECONDS`, String(definition.retry.maxSeconds));
    }
    fn.addEventSource(
      new SqsEventSource(queue, {
        batchSize: definition.batchSize,
        maxBatchingWindow: Duration.seconds(definition.maxBatchingWindowSeconds),
        reportBatchItemFailures: true,
      }),
    );
    const errors = fn.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' });
    const alarm = new Alarm(this, `${pascalCase(fn.source)}ErrorsAlarm`, {
      alarmDescription: `The ${fn.source} Lambda failed whole batches of the ${name} queue (they are retried): see its logs.`,
      metric: errors,
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    this.consumerAlarms.set(name, alarm);
    const graph = (title: string, metrics: IMetric[]) => new GraphWidget({ title, left: metrics });
    this.dashboard.addWidgets(
      graph(`${fn.source}: invocations and errors`, [
        fn.metricInvocations({ period: ONE_MINUTE }),
        fn.metricErrors({ period: ONE_MINUTE }),
        fn.metricThrottles({ period: ONE_MINUTE }),
      ]),
      graph(`${fn.source}: duration (ms)`, [
        fn.metricDuration({ period: ONE_MINUTE, statistic: 'p50' }),
        fn.metricDuration({ period: ONE_MINUTE, statistic: 'Maximum' }),
      ]),
      new AlarmStatusWidget({ title: `${name} alarms`, alarms: [dlqAlarm, alarm] }),
    );
    return this;
  }

  /**
   * Lets `fn` move messages of a queue's DLQ back to the queue (a DLQ replay) and tells it both
   * URLs (`<NAME>_QUEUE_URL`, `<NAME>_DLQ_URL`): it receives from the DLQ, makes the messages it
   * leaves visible again and deletes those it moved, and sends to the queue; nothing else.
   */
  allowReplay(name: QueueName, fn: HandlerFunction): this {
    const { definition, queue, dlq } = this.queues[name];
    dlq.grant(fn, 'sqs:ReceiveMessage', 'sqs:ChangeMessageVisibility', 'sqs:DeleteMessage');
    queue.grant(fn, 'sqs:SendMessage');
    fn.addEnvironment(definition.urlEnv, queue.queueUrl);
    fn.addEnvironment(definition.urlEnv.replace(/_QUEUE_URL$/, '_DLQ_URL'), dlq.queueUrl);
    return this;
  }

  /** Lets `fn` send messages to a queue and tells it the queue's URL. */
  allowSend(name: QueueName, fn: HandlerFunction): this {
    const { definition, queue } = this.queues[name];
    fn.bindQueue(queue, definition.urlEnv, 'send');
    return this;
  }
}
