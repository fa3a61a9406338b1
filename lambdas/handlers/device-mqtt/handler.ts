import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { enqueueIngest } from '../../domain/doors/device-api';
import { handleMqttQueueMessages, type DeviceMqttDeps } from '../../domain/doors/device-mqtt';
import { deviceQuota, hundredthOf } from '../../domain/limits/device-quota';
import { limitsMemory } from '../../domain/limits/limits';
import { usageBuffer } from '../../domain/limits/usage';
import { forwardAndLog } from '../../domain/webhooks/events';
import { consoleLive } from '../../domain/console-live/live';
import { registryDb } from '../../shared/clients';
import { INGEST_QUEUE_URL, LIMITS_CACHE_SECONDS } from '../../shared/env';
import { registerShutdownExtension } from '../../shared/shutdown';
import { publishToDevice } from '../../stores/device-channel';
import { publishToConsoles } from '../../stores/console-channel';
import { sendMessages } from '../../stores/queue-store';

const db = registryDb();
const limits = limitsMemory(db, { ttlMs: LIMITS_CACHE_SECONDS * 1000 });
const deps: DeviceMqttDeps = {
  db,
  enqueue: enqueueIngest,
  forward: forwardAndLog(db),
  publish: publishToDevice,
  relayData: (messages) => sendMessages(INGEST_QUEUE_URL, messages),
  live: consoleLive(publishToConsoles),
  // A message is one event or one request: a claim takes a hundredth of the device's day, not a write a message.
  quotas: {
    events: deviceQuota(db, 'events', { limits, slice: hundredthOf, max: 100_000 }),
    upMessages: deviceQuota(db, 'up_messages', { limits, slice: hundredthOf, max: 100_000 }),
    // Each batch's counts at once (one write per workspace and day); a failed write is kept for the next.
    usage: usageBuffer(db, { flushMs: 0 }).add,
  },
};
// Told of its container's end, to give back the devices' daily counts it claimed and did not use.
await registerShutdownExtension();

/**
 * The MQTT queue's consumer (an SQS event source with ReportBatchItemFailures): what the topic
 * rules forward (`j/up`, presence), handled by the same domain functions as the HTTPS door, each
 * `j/up` message counted against its device's daily quotas; answers with the messages to retry.
 * Data publishes go to the ingest queue.
 */
export const handler = async (event: SQSEvent): Promise<SQSBatchResponse> => {
  const failed = await handleMqttQueueMessages(
    deps,
    event.Records.map(({ messageId, body }) => ({ messageId, body })),
  );
  return { batchItemFailures: failed.map((itemIdentifier) => ({ itemIdentifier })) };
};
