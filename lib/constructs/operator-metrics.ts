import { Duration } from 'aws-cdk-lib';
import { GraphWidget, Metric, type Dashboard } from 'aws-cdk-lib/aws-cloudwatch';
import { FilterPattern, MetricFilter, type ILogGroup } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { METRICS_NAMESPACE, METRICS_SERVICE, OPERATOR_METRICS, STAGE_THROTTLED_METRIC, type OperatorMetric } from '../../lambdas/metrics';

export interface OperatorMetricsProps {
  /** The dashboard the graphs go on (the stack's one). */
  readonly dashboard: Dashboard;
  /** API Gateway's access log (lib/constructs/api.ts), whose THROTTLED answers become a metric. */
  readonly accessLogs: ILogGroup;
}

const ONE_MINUTE = Duration.minutes(1);

/**
 * The operators' view of limits and usage (DESIGN §13): the handlers' metrics (lambdas/metrics.ts,
 * written as embedded metric format, so CloudWatch makes them from the logs with no API call)
 * graphed on the stack's dashboard by theme, and the requests the API stage's own throttle refused,
 * counted from its access log (they never reach a handler).
 */
export class OperatorMetrics extends Construct {
  /** Each operator metric, as CloudWatch names it: summed per minute. */
  readonly metrics: ReadonlyMap<string, Metric>;
  readonly stageThrottled: Metric;

  constructor(scope: Construct, id: string, props: OperatorMetricsProps) {
    super(scope, id);
    this.metrics = new Map(
      OPERATOR_METRICS.map((m) => [
        m.name,
        new Metric({
          namespace: METRICS_NAMESPACE,
          metricName: m.name,
          dimensionsMap: { service: METRICS_SERVICE },
          statistic: 'Sum',
          period: ONE_MINUTE,
          label: m.name,
        }),
      ]),
    );
    // The access log's errorType is $context.error.responseType: THROTTLED for the stage's throttle.
    const filter = new MetricFilter(this, 'StageThrottledFilter', {
      logGroup: props.accessLogs,
      filterPattern: FilterPattern.stringValue('$.errorType', '=', 'THROTTLED'),
      metricNamespace: METRICS_NAMESPACE,
      metricName: STAGE_THROTTLED_METRIC,
      metricValue: '1',
    });
    this.stageThrottled = filter.metric({ statistic: 'Sum', period: ONE_MINUTE, label: STAGE_THROTTLED_METRIC });
    const graphs = [...new Set(OPERATOR_METRICS.map((m) => m.graph))] as Array<OperatorMetric['graph']>;
    props.dashboard.addWidgets(
      ...graphs.map(
        (graph) =>
          new GraphWidget({
            title: `${graph} (per minute)`,
            left: [
              ...OPERATOR_METRICS.filter((m) => m.graph === graph).map((m) => this.metrics.get(m.name)!),
              ...(graph === 'Refusals and throttles' ? [this.stageThrottled] : []),
            ],
          }),
      ),
    );
  }
}
