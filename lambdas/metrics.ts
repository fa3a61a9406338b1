/**
 * THE operator metrics: what the handlers emit as CloudWatch metrics (embedded metric format,
 * Powertools Metrics, lambdas/shared/metrics.ts) and what the stack's dashboard graphs. Pure data:
 * the handlers and the stack both read it.
 */

/** The namespace of every Fleetstream metric. */
export const METRICS_NAMESPACE = 'Fleetstream';

/** The `service` dimension every metric carries (Powertools' default dimension). */
export const METRICS_SERVICE = 'fleetstream';

/** A metric: its name, what it counts, and the dashboard graph it is drawn in. */
export interface OperatorMetric {
  readonly name: string;
  readonly description: string;
  readonly graph: 'Data points' | 'Webhook POSTs' | 'Refusals and throttles' | 'Rollouts';
}

export const OPERATOR_METRICS = [
  {
    name: 'PointsReceived',
    graph: 'Data points',
    description: 'Data points received by the ingest Lambda (stored, refused or a repeat), counted once its batch is done',
  },
  { name: 'PointsStored', graph: 'Data points', description: 'Data points written to the store' },
  { name: 'PointsRefused', graph: 'Data points', description: 'Data points refused past their device’s points_per_device_per_day (either door)' },
  { name: 'WebhookDeliveries', graph: 'Webhook POSTs', description: 'Webhook POSTs answered 2xx' },
  { name: 'WebhookFailures', graph: 'Webhook POSTs', description: 'Webhook POSTs that failed' },
  { name: 'RateLimited', graph: 'Refusals and throttles', description: 'API requests refused past their key’s requests_per_second_per_key (429 rate_limited)' },
  {
    name: 'QuotaExceeded',
    graph: 'Refusals and throttles',
    description: 'Requests refused by a workspace’s quota or a device’s daily points (429 quota_exceeded)',
  },
  {
    name: 'DeviceAuthenticationFailures',
    graph: 'Refusals and throttles',
    description: 'Device tokens refused at either door (HTTPS device authorizer, MQTT custom authorizer), one per attempt, forged or not',
  },
  { name: 'Throttled', graph: 'Refusals and throttles', description: 'Requests answered 429 throttled: a store (DynamoDB, SQS) throttling the handler' },
  {
    name: 'RolloutStateChanges',
    graph: 'Rollouts',
    description: 'Devices’ job and FOTA state changes counted into rollouts by the registry stream’s consumer',
  },
] as const satisfies readonly OperatorMetric[];

export type OperatorMetricName = (typeof OPERATOR_METRICS)[number]['name'];

/**
 * The metric the stack makes from API Gateway's access log: requests its stage's throttle refused
 * (THROTTLED, 429 rate_limited), which never reach a handler to be counted there.
 */
export const STAGE_THROTTLED_METRIC = 'StageThrottled';
