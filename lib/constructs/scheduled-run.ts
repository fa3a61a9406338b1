import { Duration } from 'aws-cdk-lib';
import { Alarm, AlarmStatusWidget, ComparisonOperator, GraphWidget, TreatMissingData, type Dashboard } from 'aws-cdk-lib/aws-cloudwatch';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { Construct } from 'constructs';
import type { ScheduleDefinition } from '../../lambdas/schedules';
import type { HandlerFunction } from './handler-function';

export interface ScheduledRunProps {
  /** The schedule, from lambdas/schedules.ts (the local runtimes run the same). */
  readonly definition: ScheduleDefinition;
  /** The function it invokes. */
  readonly handler: HandlerFunction;
  /** Where its graph and alarm go. */
  readonly dashboard?: Dashboard;
}

// A run failing this many minutes in a row is not a passing fault (an engine hiccup), but a sweep
// that no longer works: releases and timeouts have stopped.
const FAILING_MINUTES = 3;

/**
 * A handler run on a schedule: an EventBridge rule (`rate(N minutes)`, on the default bus) whose
 * one target is the function, with the invoke permission EventBridge needs (a resource policy for
 * events.amazonaws.com, limited to this rule's ARN). A run that fails or misses its time is not
 * retried, neither by EventBridge nor by Lambda's asynchronous invocation: the next run does the
 * same work, and a retry would only run beside it. An alarm goes off when runs fail
 * FAILING_MINUTES minutes in a row.
 */
export class ScheduledRun extends Construct {
  readonly rule: Rule;
  readonly errorsAlarm: Alarm;

  constructor(scope: Construct, id: string, props: ScheduledRunProps) {
    super(scope, id);
    const { definition, handler } = props;
    const period = Duration.minutes(definition.everyMinutes);
    // EventBridge's shortest maximum event age is one minute; Lambda's asynchronous queue keeps an event at least as long.
    const maxEventAge = Duration.seconds(Math.max(60, period.toSeconds()));
    this.rule = new Rule(this, 'Rule', {
      description: definition.description,
      schedule: Schedule.rate(period),
      targets: [new LambdaFunction(handler, { retryAttempts: 0, maxEventAge })],
    });
    handler.configureAsyncInvoke({ retryAttempts: 0, maxEventAge });

    this.errorsAlarm = new Alarm(this, 'ErrorsAlarm', {
      alarmDescription: `The ${handler.source} Lambda failed ${FAILING_MINUTES} scheduled runs in a row: see its logs.`,
      metric: handler.metricErrors({ period, statistic: 'Sum' }),
      threshold: 1,
      evaluationPeriods: FAILING_MINUTES,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    props.dashboard?.addWidgets(
      new GraphWidget({
        title: `${handler.source}: runs, errors, duration (ms)`,
        left: [handler.metricInvocations({ period }), handler.metricErrors({ period })],
        right: [handler.metricDuration({ period, statistic: 'Maximum' })],
      }),
      new AlarmStatusWidget({ title: `${handler.source} alarm`, alarms: [this.errorsAlarm] }),
    );
  }
}
