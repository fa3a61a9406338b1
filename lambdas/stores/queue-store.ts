import { SQSClient, SendMessageBatchCommand } from '@aws-sdk/client-sqs';

// Created once per container; the endpoint comes from AWS_ENDPOINT_URL_SQS when set.
let sqs: SQSClient | undefined;
const client = () => (sqs ??= new SQSClient({}));

const SEND_BATCH_LIMIT = 10; // SendMessageBatch takes at most 10 entries
const MAX_ATTEMPTS = 5;

/**
 * Sends each body as one JSON message, 10 per SendMessageBatch, retrying failed entries with
 * backoff. @throws when an entry still fails, so the caller's request fails (and is retried)
 * rather than losing it.
 */
export const sendMessages = async (queueUrl: string, bodies: unknown[]) => {
  for (let i = 0; i < bodies.length; i += SEND_BATCH_LIMIT) {
    let entries = bodies.slice(i, i + SEND_BATCH_LIMIT).map((body, j) => ({ Id: String(j), MessageBody: JSON.stringify(body) }));
    for (let attempt = 0; entries.length; attempt++) {
      if (attempt >= MAX_ATTEMPTS) throw new Error(`SQS refused ${entries.length} messages to ${queueUrl}`);
      if (attempt > 0) await new Promise((r) => setTimeout(r, Math.random() * 50 * 2 ** attempt));
      const result = await client().send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }));
      const failed = new Set((result.Failed ?? []).map((f) => f.Id));
      entries = entries.filter((e) => failed.has(e.Id));
    }
  }
};
