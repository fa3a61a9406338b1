import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { enqueueIngest } from '../domain/device-api';
import { handleMqttQueueMessages, type DeviceMqttDeps } from '../domain/device-mqtt';
import { publishForward } from '../domain/events';
import { registryDb } from '../shared/clients';
import { publishToDevice } from '../stores/device-channel';

const deps: DeviceMqttDeps = { db: registryDb(), enqueue: enqueueIngest, forward: publishForward, publish: publishToDevice };

/**
 * The MQTT queue's consumer (an SQS event source with ReportBatchItemFailures): what the topic
 * rules forward (`j/data`, `j/up`, presence), handled by the same domain functions as the HTTPS
 * door; answers with the messages to retry.
 */
export const handler = async (event: SQSEvent): Promise<SQSBatchResponse> => {
  const failed = await handleMqttQueueMessages(deps, event.Records.map(({ messageId, body }) => ({ messageId, body })));
  return { batchItemFailures: failed.map((itemIdentifier) => ({ itemIdentifier })) };
};
