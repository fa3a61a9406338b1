import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { forwardAndLog } from '../../domain/webhooks/events';
import { firmwareDownloads } from '../../domain/fleet-ops/firmware';
import { deliverScheduled } from '../../domain/doors/live-delivery';
import { consoleLive } from '../../domain/console-live/live';
import { forwardRegistryChanges, type RegistryEventsDeps } from '../../domain/fleet-ops/registry-events';
import { countRolloutChanges, type CountDeps } from '../../domain/fleet-ops/rollout-counts';
import { addLateDevices } from '../../domain/fleet-ops/late-devices';
import { followStateReports } from '../../domain/fleet-ops/state-reports';
import { followConditionAlarms } from '../../domain/alarms/condition-changes';
import { detectionDeps } from '../../domain/alarms/detection';
import { followDeviceAlarms } from '../../domain/alarms/device-changes';
import { registryDb } from '../../shared/clients';
import { MQTT_LIVE_DELIVERY, WRITE_CONCURRENCY } from '../../shared/env';
import { publishMetrics } from '../../shared/metrics';
import { publishToDevice } from '../../stores/device-channel';
import { publishToConsoles } from '../../stores/console-channel';

const db = registryDb();
const events: Omit<RegistryEventsDeps, 'retriedFrom'> = {
  db,
  forward: forwardAndLog(db),
  concurrency: WRITE_CONCURRENCY,
  // A FOTA of an uploaded firmware goes out with a download URL, minted once per group for its version.
  deliver: (changes) => deliverScheduled(publishToDevice, changes, MQTT_LIVE_DELIVERY, firmwareDownloads(db)),
};
// Transactions of one batch at once: a batch of 1,000 records is about ten of them.
const counts: CountDeps = { db, concurrency: 4, live: consoleLive(publishToConsoles) };
const alarms = { ...detectionDeps(db), concurrency: WRITE_CONCURRENCY };
// Reports of every device of a workspace share one partition key, so one lane of the stream: a batch
// of them must end as fast as devices report, or the lane falls behind (bench:state: at 16 at once,
// 20,000 reports left it 18.7 s behind; at 64, 0.9 s). Below the SDK's 50 sockets per host.
const STATE_REPORTS_CONCURRENCY = 48;

/**
 * The registry stream's consumer (a DynamoDB stream event source with ReportBatchItemFailures and
 * a filter on job, FOTA and device items): counts each change in its rollout (and ends a rollout that its
 * counts end), sends the `job`/`fota` event of each change to the forward queue, publishes
 * just-scheduled and released jobs and FOTA (with their firmware's download) to their connected
 * devices, gives devices created, moved or re-tagged the jobs and FOTA of the continuous rollouts
 * they now match (whose items come back through the stream as any scheduling's), ends as `done` the
 * devices of state rollouts whose reports now hold the desired keys, starts and ends alarm timers
 * (devices disconnected, reconnected or seen first; conditions opened and closed), and answers with
 * the record to retry from, if any: the first one a part failed (each is idempotent for the records after it). The operator metrics its work added are written
 * as it ends.
 */
export const handler = async (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> => {
  try {
    const records = event.Records;
    const late = addLateDevices({ db, concurrency: WRITE_CONCURRENCY }, records).then((failed) => failed ?? records.length);
    const reports = followStateReports({ db, concurrency: STATE_REPORTS_CONCURRENCY }, records).then((failed) => failed ?? records.length);
    const deviceAlarms = followDeviceAlarms(alarms, records).then((failed) => failed ?? records.length);
    const conditionAlarms = followConditionAlarms(alarms, records).then((failed) => failed ?? records.length);
    const counted = countRolloutChanges(counts, records).then((failed) => failed ?? records.length);
    // Live delivery waits for the counts: a record the stream will retry is published with its retry only.
    const failed = await forwardRegistryChanges({ ...events, retriedFrom: counted }, records);
    const forwardedTo =
      failed === undefined
        ? records.length
        : Math.max(
            0,
            records.findIndex((r) => r.dynamodb?.SequenceNumber === failed),
          );
    const first = Math.min(await counted, forwardedTo, await late, await reports, await deviceAlarms, await conditionAlarms);
    return { batchItemFailures: first < records.length ? [{ itemIdentifier: records[first].dynamodb!.SequenceNumber! }] : [] };
  } finally {
    publishMetrics();
  }
};
