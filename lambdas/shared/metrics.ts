import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { METRICS_NAMESPACE, METRICS_SERVICE, type OperatorMetricName } from '../metrics';

/**
 * The one Powertools Metrics of every handler: metrics added during an invocation are written at
 * its end as one embedded-metric-format log line, which CloudWatch turns into metrics (no API call).
 * `POWERTOOLS_METRICS_DISABLED=true` keeps them out of the log (the tests do).
 */
export const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: METRICS_SERVICE });

/**
 * Adds `count` to an operator metric of this invocation (lambdas/metrics.ts); nothing for 0. The
 * registry stream's consumer calls `countMetric('RolloutStateChanges', n)` for the state changes it
 * counts into rollouts.
 * @example countMetric('PointsRefused', refused.length)
 */
export const countMetric = (name: OperatorMetricName, count = 1) => {
  if (count > 0) metrics.addMetric(name, MetricUnit.Count, count);
};

/** Writes the invocation's metrics, if any were added (an invocation without them writes nothing). */
export const publishMetrics = () => {
  if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
};
