import {
  ChangeMessageVisibilityBatchCommand,
  SQSClient,
  SendMessageBatchCommand,
  SendMessageCommand,
  type BatchResultErrorEntry,
  type SendMessageBatchRequestEntry,
} from '@aws-sdk/client-sqs';
import { toQueueBody } from '../shared/json';

// Created once per container; the endpoint comes from AWS_ENDPOINT_URL_SQS when set, and it (not
// the host written in a queue URL, which a local engine may make unresolvable) decides where
// requests go.
let sqs: SQSClient | undefined;
const client = () => (sqs ??= new SQSClient({ useQueueUrlAsEndpoint: false }));

const SEND_BATCH_LIMIT = 10; // SendMessageBatch takes at most 10 entries…
// …and 1 MiB in all since SQS raised its payload limit (2025-08; it was 256 KiB): each message
// stays within its queue's MaximumMessageSize. An engine that still refuses a batch as too long
// gets it again in halves (BatchRequestTooLong), so the older limit only costs calls.
const SEND_BATCH_BYTES = 1024 * 1024;
const MAX_ATTEMPTS = 5;

/** Groups message bodies into SendMessageBatch calls within SQS's count and size limits. */
const batchesOf = (bodies: string[]) => {
  const batches: string[][] = [];
  let current: string[] = [];
  let bytes = 0;
  for (const body of bodies) {
    const size = Buffer.byteLength(body);
    if (current.length === SEND_BATCH_LIMIT || (current.length && bytes + size > SEND_BATCH_BYTES)) {
      batches.push(current);
      current = [];
      bytes = 0;
    }
    current.push(body);
    bytes += size;
  }
  if (current.length) batches.push(current);
  return batches;
};

/**
 * One SendMessageBatch call, sent again in halves while SQS refuses it as too long (an engine that
 * still takes 256 KiB a call, or ten full forward packs over 1 MiB): the IDs sent, and the entries
 * that failed. The queue store and the DLQ replay both send through it.
 */
export const sendBatchInHalves = async (
  sqs: SQSClient,
  queueUrl: string,
  entries: SendMessageBatchRequestEntry[],
): Promise<{ sent: string[]; failed: BatchResultErrorEntry[] }> => {
  try {
    const result = await sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }));
    return { sent: (result.Successful ?? []).map((s) => s.Id!), failed: result.Failed ?? [] };
  } catch (error) {
    if ((error as Error).name !== 'BatchRequestTooLong' || entries.length < 2) throw error;
    const half = Math.ceil(entries.length / 2);
    const first = await sendBatchInHalves(sqs, queueUrl, entries.slice(0, half));
    const second = await sendBatchInHalves(sqs, queueUrl, entries.slice(half));
    return { sent: [...first.sent, ...second.sent], failed: [...first.failed, ...second.failed] };
  }
};

const sendBatch = async (queueUrl: string, bodies: string[]) => {
  let entries = bodies.map((MessageBody, j) => ({ Id: String(j), MessageBody }));
  for (let attempt = 0; entries.length; attempt++) {
    if (attempt >= MAX_ATTEMPTS) throw new Error(`SQS refused ${entries.length} messages to ${queueUrl}`);
    if (attempt > 0) await new Promise((r) => setTimeout(r, Math.random() * 50 * 2 ** attempt));
    const failed = new Set((await sendBatchInHalves(client(), queueUrl, entries)).failed.map((f) => f.Id));
    entries = entries.filter((e) => failed.has(e.Id));
  }
};

/**
 * Sends each body as one JSON message with SendMessageBatch (≤ 10 and ≤ 1 MiB a call),
 * `concurrency` calls in flight, retrying failed entries with backoff. Bodies are pure-ASCII JSON
 * (`toQueueBody`), so any JSON value travels every SQS implementation and parses back unchanged.
 * @throws when an entry still fails, so the caller's request fails (and is retried) rather than losing it.
 */
export const sendMessages = (queueUrl: string, bodies: unknown[], concurrency = 1) => sendEncodedMessages(queueUrl, bodies.map(toQueueBody), concurrency);

/**
 * `sendMessages` for bodies already in the queues' encoding (`toQueueBody`'s pure-ASCII JSON, or
 * lines of it: forward packs).
 * @throws when an entry still fails.
 */
export const sendEncodedMessages = async (queueUrl: string, bodies: string[], concurrency = 1) => {
  const batches = batchesOf(bodies);
  let next = 0;
  const worker = async () => {
    while (next < batches.length) await sendBatch(queueUrl, batches[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, batches.length) }, worker));
};

/** SQS's longest delay of a message: https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-message-timers.html */
export const MESSAGE_DELAY_MAX_SECONDS = 900;

/**
 * Sends one JSON message that becomes visible `delaySeconds` later (0–900, a message timer).
 * @throws when SQS refuses it, so that the caller's request fails rather than losing it.
 */
export const sendDelayedMessage = async (queueUrl: string, body: unknown, delaySeconds: number) => {
  await client().send(
    new SendMessageCommand({
      QueueUrl: queueUrl,
      MessageBody: toQueueBody(body),
      DelaySeconds: Math.max(0, Math.min(MESSAGE_DELAY_MAX_SECONDS, Math.ceil(delaySeconds))),
    }),
  );
};

/**
 * Hides received messages for the given seconds each (ChangeMessageVisibilityBatch), so that a
 * failed one is retried later rather than after the queue's visibility timeout. Best effort: a
 * message that cannot be changed comes back after the visibility timeout anyway.
 * @returns how many could not be changed.
 */
export const delayMessages = async (queueUrl: string, delays: Array<{ receiptHandle: string; seconds: number }>) => {
  let failed = 0;
  for (let i = 0; i < delays.length; i += SEND_BATCH_LIMIT) {
    const entries = delays
      .slice(i, i + SEND_BATCH_LIMIT)
      .map(({ receiptHandle, seconds }, j) => ({ Id: String(j), ReceiptHandle: receiptHandle, VisibilityTimeout: seconds }));
    const result = await client().send(new ChangeMessageVisibilityBatchCommand({ QueueUrl: queueUrl, Entries: entries }));
    failed += result.Failed?.length ?? 0;
  }
  return failed;
};
