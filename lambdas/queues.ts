/**
 * The SQS queues of the system, as data: the local runtime creates them on fauxqs and drives their
 * consumers with its poller, and the CDK construct creates them on AWS with event source mappings,
 * both from these rows, so that the two cannot disagree. No engine or CDK import here.
 */

export type QueueName = 'ingest' | 'forward' | 'mqtt' | 'retention' | 'export' | 'alarm-notifications';

/** The Lambda (a folder under `lambdas/`) that consumes a queue. */
export type QueueConsumer = 'ingest' | 'forwarder' | 'device-mqtt' | 'retention' | 'export' | 'alarm-notifier';

/** How a queue behaves and how its consumer is fed; the names follow the SQS and Lambda settings. */
export interface QueueSettings {
  /** Seconds a received message stays hidden; AWS advises ≥ 6× the consumer's timeout for Lambda event sources. */
  visibilityTimeoutSeconds: number;
  /** Receives before SQS moves a message to the queue's DLQ (the redrive policy). */
  maxReceiveCount: number;
  /** Most messages per consumer invocation (Lambda: 1…10,000 for standard queues). */
  batchSize: number;
  /** Longest wait to fill a batch; Lambda requires ≥ 1 s when batchSize > 10. */
  maxBatchingWindowSeconds: number;
  /** Seconds the consumer may run (the Lambda's timeout). */
  consumerTimeoutSeconds: number;
  /**
   * Retry backoff the consumer applies to a failed message by ChangeMessageVisibility:
   * base × 2^(receives − 1), at most max. Without it a failed message returns after the
   * visibility timeout.
   */
  retry?: { baseSeconds: number; maxSeconds: number };
}

export interface QueueDefinition extends QueueSettings {
  name: QueueName;
  /** The environment variable through which handlers find the queue's URL (lambdas/shared/env.ts). */
  urlEnv: 'INGEST_QUEUE_URL' | 'FORWARD_QUEUE_URL' | 'MQTT_QUEUE_URL' | 'RETENTION_QUEUE_URL' | 'EXPORT_QUEUE_URL' | 'ALARM_NOTIFICATIONS_QUEUE_URL';
  /** The queue's DLQ is named `<name>-dlq` locally; it keeps messages this long (the SQS maximum). */
  dlqRetentionDays: number;
}

const DLQ_RETENTION_DAYS = 14;

export const QUEUES: Record<QueueName, QueueDefinition> = {
  // Up to 1,000 messages an invocation, within the 1 s window: under load an invocation takes a
  // second's points at once, so its store writes, forward sends and usage write come once per
  // 1,000 publishes rather than per 100. An event stays within Lambda's 6 MB whatever the batch
  // size (HTTPS messages of 100 points are tens of KB: a few hundred fit), so an invocation's work
  // is bounded by bytes as before (10,000 points in ~0.3 s in bench:ingest).
  ingest: {
    name: 'ingest',
    urlEnv: 'INGEST_QUEUE_URL',
    visibilityTimeoutSeconds: 60,
    maxReceiveCount: 5,
    batchSize: 1000,
    maxBatchingWindowSeconds: 1,
    consumerTimeoutSeconds: 10,
    dlqRetentionDays: DLQ_RETENTION_DAYS,
  },
  // 10 receives with backoff 30 s … 15 min span about 75 minutes: a receiver that is down for an
  // hour loses nothing and needs no replay. A message is a pack of up to 256 KB (hundreds of points
  // or events), so 10 of them already make POSTs of up to 1 MB; no batching window, so that no pack
  // waits a second for others (Lambda requires a window of ≥ 1 s above 10 messages).
  forward: {
    name: 'forward',
    urlEnv: 'FORWARD_QUEUE_URL',
    visibilityTimeoutSeconds: 180,
    maxReceiveCount: 10,
    batchSize: 10,
    maxBatchingWindowSeconds: 0,
    consumerTimeoutSeconds: 30,
    retry: { baseSeconds: 30, maxSeconds: 900 },
    dlqRetentionDays: DLQ_RETENTION_DAYS,
  },
  // What the MQTT topic rules forward (lambdas/mqtt-rules.ts): device publishes and presence.
  // Small batches and no batching window, because `#status` and `#now` wait for their answers
  // (Lambda requires a window of ≥ 1 s above 10 messages).
  mqtt: {
    name: 'mqtt',
    urlEnv: 'MQTT_QUEUE_URL',
    visibilityTimeoutSeconds: 60,
    maxReceiveCount: 5,
    batchSize: 10,
    maxBatchingWindowSeconds: 0,
    consumerTimeoutSeconds: 10,
    dlqRetentionDays: DLQ_RETENTION_DAYS,
  },
  // Re-stamps of the expiry of a workspace's stored points after its retention changed
  // (lambdas/domain/data/retention.ts), and purges of a deleted device's or workspace's points
  // (lambdas/domain/data/purge.ts): one job a message, each run up to 5 minutes, then it puts itself
  // back with where it stopped. A failed run comes back after the visibility timeout (6× the
  // consumer's, as AWS advises for Lambda event sources).
  retention: {
    name: 'retention',
    urlEnv: 'RETENTION_QUEUE_URL',
    visibilityTimeoutSeconds: 1800,
    maxReceiveCount: 5,
    batchSize: 1,
    maxBatchingWindowSeconds: 0,
    consumerTimeoutSeconds: 300,
    dlqRetentionDays: DLQ_RETENTION_DAYS,
  },
  // Data exports (lambdas/domain/exports/export-runs.ts): one export a message; a run streams the range into
  // S3 until a minute before Lambda's longest timeout (15 minutes), then puts the export back with
  // where it stopped. A failed run comes back after the backoff, not after the visibility timeout
  // (6× the consumer's, as AWS advises for Lambda event sources); an export whose runs keep
  // failing is marked failed by its fifth before SQS would dead-letter the message.
  export: {
    name: 'export',
    urlEnv: 'EXPORT_QUEUE_URL',
    visibilityTimeoutSeconds: 5400,
    maxReceiveCount: 6,
    batchSize: 1,
    maxBatchingWindowSeconds: 0,
    consumerTimeoutSeconds: 900,
    retry: { baseSeconds: 30, maxSeconds: 900 },
    dlqRetentionDays: DLQ_RETENTION_DAYS,
  },
  // Alarm transitions on their way to their `alarm` webhook event and e-mails
  // (lambdas/domain/alarms/notifications.ts): a few a minute, each sent once by its transition id.
  // 8 receives with backoff 30 s … 15 min span about 45 minutes: an SES outage of half an hour
  // loses nothing; the last failed receive writes the rule's `last_notification_error`, and the
  // message waits in the DLQ.
  'alarm-notifications': {
    name: 'alarm-notifications',
    urlEnv: 'ALARM_NOTIFICATIONS_QUEUE_URL',
    visibilityTimeoutSeconds: 180,
    maxReceiveCount: 8,
    batchSize: 10,
    maxBatchingWindowSeconds: 0,
    consumerTimeoutSeconds: 30,
    retry: { baseSeconds: 30, maxSeconds: 900 },
    dlqRetentionDays: DLQ_RETENTION_DAYS,
  },
};

/**
 * Which handler consumes which queue; the local runtime starts a poller per row and the stack an
 * event source mapping. Adding a consumer is one line.
 */
export const QUEUE_CONSUMERS: Partial<Record<QueueName, QueueConsumer>> = {
  ingest: 'ingest',
  forward: 'forwarder',
  mqtt: 'device-mqtt',
  retention: 'retention',
  export: 'export',
  'alarm-notifications': 'alarm-notifier',
};

/**
 * The Lambdas (handler folders) that put messages on each queue: the stack grants them
 * SendMessage and tells them the URL. Locally every handler may send.
 */
export const QUEUE_PRODUCERS: Record<QueueName, readonly string[]> = {
  ingest: ['device-api', 'device-mqtt'],
  // Job and FOTA events come from the registry stream's consumer, not from the jobs and fota handlers.
  forward: ['registry-stream', 'device-api', 'device-authorizer', 'ingest', 'device-mqtt', 'mqtt-authorizer', 'alarm-notifier'],
  // Filled by IoT Core's topic rules, not by a Lambda.
  mqtt: [],
  // A retention change queues its re-stamp, a deletion its purge (`?purge=data`, a workspace's);
  // a run that stops queues the rest (or the wait before it).
  retention: ['workspaces', 'devices', 'retention'],
  // An export request queues its export; a run that stops queues the rest.
  export: ['timeseries', 'export'],
  // An acknowledgement, a rule disabled or deleted and a device deleted (their alarms close) are
  // transitions told from the API; the detection's opens and closes from the registry stream's
  // consumer, the minute sweep and the ingest (threshold rules).
  'alarm-notifications': ['alarms', 'devices', 'registry-stream', 'rollout-sweep', 'ingest'],
};

/**
 * The Lambdas (folders under `lambdas/`) that move a queue's dead-lettered messages back to it: the
 * integrations routes replay a webhook's (POST …/integrations/{id}/replay). Each may receive from,
 * release and delete in the DLQ, and send to the queue; it finds them by `<NAME>_QUEUE_URL` and
 * `<NAME>_DLQ_URL`.
 */
export const QUEUE_REPLAYERS: Partial<Record<QueueName, readonly string[]>> = {
  forward: ['integrations'],
};

/** The DLQ of a queue, by name (fauxqs; the stack lets CloudFormation name its queues). */
export const dlqNameOf = (name: QueueName) => `${name}-dlq`;
