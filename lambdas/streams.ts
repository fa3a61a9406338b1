/**
 * The DynamoDB table streams of the system and their consumers, as data: the CDK stack enables the
 * stream and builds the event source mapping from these rows, and the local runtime runs its
 * stream poller with the same settings, so that the two cannot disagree. No engine or CDK import.
 */
import { CONDITION_SORT_KEY_PREFIX, DEVICE_SORT_KEY_PREFIX, FOTA_SORT_KEY_PREFIX, JOB_SORT_KEY_PREFIX, STATE_EXECUTION_SORT_KEY_PREFIX } from './stores/keys';

/** The Lambda (a folder under `lambdas/`) that consumes a stream. */
export type StreamConsumer = 'registry-stream';

/** How a stream's consumer is fed; the names follow Lambda's stream event source mapping settings. */
export interface StreamDefinition {
  /** The table whose stream it is (the registry). */
  table: 'registry';
  consumer: StreamConsumer;
  /** Most records per invocation (Lambda: 1…10,000 for DynamoDB streams). */
  batchSize: number;
  /** Longest wait, from the first record, to fill a batch (Lambda: 0…300 s). */
  maxBatchingWindowSeconds: number;
  /**
   * Batches of one shard handled at once (Lambda: 1…10). Records of one partition key stay in one
   * of them, in order: for the registry, the changes of one device's items.
   */
  parallelizationFactor: number;
  /**
   * Retries of a failing batch before its description goes to the on-failure destination and the
   * shard moves on. Halving a batch (bisect) does not count (Lambda's own rule).
   */
  retryAttempts: number;
  /** Split a batch whose invocation failed in two, to isolate a bad record. */
  bisectBatchOnError: boolean;
  /** Seconds the consumer may run (the Lambda's timeout). */
  consumerTimeoutSeconds: number;
  /** Only changes of items whose sort key starts with one of these reach the consumer (filter criteria). */
  sortKeyPrefixes: readonly string[];
  /** Only these kinds of change reach the consumer (a deleted job emits nothing). */
  eventNames: ReadonlyArray<'INSERT' | 'MODIFY' | 'REMOVE'>;
}

/**
 * The registry table's change stream (NEW_AND_OLD_IMAGES) turns every job and FOTA change into its
 * `job`/`fota` event: the request paths only write, and the event is guaranteed to follow. Device
 * items' changes come too: a device created, moved or re-tagged joins the continuous rollouts it
 * now matches (a change of no watched field is dropped by the consumer without a request), and a
 * device whose reported state changed moves its desired-state rollouts' devices to `done`; those
 * devices' own items (`STATEROL#`) are counted in their rollouts as jobs are, with no event.
 * Alarms ride on the same records: a device's disconnection, reconnection and first point start
 * and end its alarm timers, and a condition's record (`COND#`, in its workspace's partition:
 * inserted open, changed to closed) starts its `condition` rules' timers and closes their alarms
 * (domain/alarms/); a device's own pointer to an open condition shares the prefix and is passed over.
 * 20 retries ride out a forward queue that refuses sends for a while (each invocation itself
 * retries a send five times with backoff); a record that still fails is described in the
 * stream's DLQ, never dropped silently.
 *
 * A fleet-wide job writes its items in a burst and its connected devices wait for the consumer's
 * publishes, so the batches are read for latency: no batching window (an invocation as soon as a
 * poll, four a second per shard, finds records: a window only made the last devices wait),
 * batches of up to 1,000 (fewer invocations and forward sends in a burst; 1,000 publishes at 32 at
 * once fit the 30 s timeout many times over), and 4 batches of a shard at once (a device's items
 * share a partition key, so its changes stay in order). Lambda's limits: batch 1…10,000, window
 * 0…300 s, factor 1…10.
 * https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-params.html
 */
export const REGISTRY_STREAM: StreamDefinition = {
  table: 'registry',
  consumer: 'registry-stream',
  batchSize: 1000,
  maxBatchingWindowSeconds: 0,
  parallelizationFactor: 4,
  retryAttempts: 20,
  bisectBatchOnError: true,
  consumerTimeoutSeconds: 30,
  sortKeyPrefixes: [JOB_SORT_KEY_PREFIX, FOTA_SORT_KEY_PREFIX, DEVICE_SORT_KEY_PREFIX, STATE_EXECUTION_SORT_KEY_PREFIX, CONDITION_SORT_KEY_PREFIX],
  eventNames: ['INSERT', 'MODIFY'],
};

/** The DLQ of a stream's consumer, by name locally (the stack lets CloudFormation name its queues). */
export const STREAM_DLQ_NAME = 'registry-stream-dlq';
