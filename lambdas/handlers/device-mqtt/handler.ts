import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { enqueueIngest } from '../../domain/doors/device-api';
import { handleMqttQueueMessages, type DeviceMqttDeps } from '../../domain/doors/device-mqtt';
import { publishForward } from '../../domain/webhooks/events';
import { registryDb } from '../../shared/clients';
import { INGEST_QUEUE_URL } from '../../shared/env';
import { publishToDevice } from '../../stores/device-channel';
import { sendMessages } from '../../stores/queue-store';

const deps: DeviceMqttDeps = {
  db: registryDb(),
  enqueue: enqueueIngest,
  forward: publishForward,
  publish: publishToDevice,
  relayData: (messages) => sendMessages(INGEST_QUEUE_URL, messages),
};

/**
 * The MQTT queue's consumer (an SQS event source with ReportBatchItemFailures): what the topic
 * rules forward (`j/up`, presence), handled by the same domain functions as the HTTPS door;
 * answers with the messages to retry. Data publishes go to the ingest queue.
 */
export const handler = async (event: SQSEvent): Promise<SQSBatchResponse> => {
  const failed = await handleMqttQueueMessages(
    deps,
    event.Records.map(({ messageId, body }) => ({ messageId, body })),
  );
  return { batchItemFailures: failed.map((itemIdentifier) => ({ itemIdentifier })) };
};
