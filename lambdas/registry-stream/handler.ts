import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { publishForward } from '../domain/events';
import { firmwareDownloads } from '../domain/firmware';
import { deliverScheduled } from '../domain/live-delivery';
import { forwardRegistryChanges, type RegistryEventsDeps } from '../domain/registry-events';
import { registryDb } from '../shared/clients';
import { MQTT_LIVE_DELIVERY, WRITE_CONCURRENCY } from '../shared/env';
import { publishMetrics } from '../shared/metrics';
import { publishToDevice } from '../stores/device-channel';

const db = registryDb();
const deps: RegistryEventsDeps = {
  db,
  forward: publishForward,
  concurrency: WRITE_CONCURRENCY,
  // A FOTA of an uploaded firmware goes out with a download URL, minted once per group for its version.
  deliver: (changes) => deliverScheduled(publishToDevice, changes, MQTT_LIVE_DELIVERY, firmwareDownloads(db)),
};

/**
 * The registry stream's consumer (a DynamoDB stream event source with ReportBatchItemFailures and
 * a filter on job and FOTA items): sends the `job`/`fota` event of each change to the forward
 * queue, publishes just-scheduled jobs and FOTA (with their firmware's download) to their
 * connected devices, and answers with the record to retry from, if any. The operator metrics its
 * work added (rollouts' state changes: `countMetric('RolloutStateChanges', n)`) are written as it ends.
 */
export const handler = async (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> => {
  try {
    const failed = await forwardRegistryChanges(deps, event.Records);
    return { batchItemFailures: failed ? [{ itemIdentifier: failed }] : [] };
  } finally {
    publishMetrics();
  }
};
