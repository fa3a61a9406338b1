import { ChangeMessageVisibilityBatchCommand, DeleteMessageBatchCommand, ReceiveMessageCommand, SQSClient, type Message } from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { invokeWithTimeout } from './lambda-invoke';

/** An SQS-triggered Lambda handler, as the runtime calls it. */
export type SqsHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse | void | null>;

export interface SqsPollerOptions {
  queueUrl: string;
  queueArn: string;
  /** The SQS endpoint to poll through; AWS_ENDPOINT_URL_SQS (or the regional one) when absent. */
  endpoint?: string;
  /**
   * FunctionResponseTypes ReportBatchItemFailures: the handler's `batchItemFailures` are honoured.
   * Without it, as on Lambda, a batch that returns succeeds whole. @default true
   */
  reportBatchItemFailures?: boolean;
  /** Most records per invocation. */
  batchSize: number;
  /** Longest wait, from the first message, to fill a batch; 0 invokes with what one receive returns. */
  maxBatchingWindowMs: number;
  /** The handler's timeout: an invocation that runs longer counts as failed, as Lambda would stop it. */
  timeoutMs: number;
  functionName: string;
  handler: SqsHandler;
  /** Batches in flight at once (Lambda scales its pollers; here it is fixed). */
  concurrency?: number;
  /** A failed receive, delete or invocation (the poller carries on). */
  onError?: (error: unknown, what: string) => void;
  /**
   * After each invocation, once its succeeded messages are deleted: how many the batch held and how
   * many were deleted (e.g. for a benchmark that times the poller by its deletes, not by polling).
   */
  onSettled?: (batch: { records: number; deleted: number }) => void;
  /**
   * Starts receiving at once (as an event source mapping created enabled); when false, messages wait
   * in the queue until `enable()` (UpdateEventSourceMapping with Enabled: true). @default true
   */
  enabled?: boolean;
}

export interface SqsPoller {
  /** Starts receiving, if the poller was created disabled. */
  enable: () => void;
  /** Stops receiving, lets running invocations finish, and resolves when every worker has ended. */
  stop: () => Promise<void>;
}

// Lambda's synchronous invocation payload limit: an event source batch never exceeds it.
const MAX_EVENT_BYTES = 6 * 1024 * 1024;
const RECEIVE_LIMIT = 10; // ReceiveMessage and DeleteMessageBatch take at most 10
const LONG_POLL_SECONDS = 20;
const PARALLEL_RECEIVES = 5;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const chunks = <T>(items: T[], size: number) => Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, i * size + size));

/** A received message as Lambda presents it in an SQS event. */
const toRecord = (message: Message, queueArn: string): SQSRecord => {
  const attributes = message.Attributes ?? {};
  return {
    messageId: message.MessageId!,
    receiptHandle: message.ReceiptHandle!,
    body: message.Body ?? '',
    attributes: {
      ApproximateReceiveCount: attributes.ApproximateReceiveCount ?? '1',
      SentTimestamp: attributes.SentTimestamp ?? String(Date.now()),
      SenderId: attributes.SenderId ?? '000000000000',
      ApproximateFirstReceiveTimestamp: attributes.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
    },
    messageAttributes: Object.fromEntries(
      Object.entries(message.MessageAttributes ?? {}).map(([name, value]) => [
        name,
        {
          dataType: value.DataType ?? 'String',
          stringValue: value.StringValue,
          binaryValue: value.BinaryValue ? Buffer.from(value.BinaryValue).toString('base64') : undefined,
          stringListValues: [],
          binaryListValues: [],
        },
      ]),
    ),
    md5OfBody: message.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: queueArn.split(':')[3] ?? 'us-east-1',
  };
};

/**
 * The message IDs to keep after an invocation. As Lambda with ReportBatchItemFailures: nothing
 * returned (or an empty list) means all succeeded; a response that names an unknown message or is
 * malformed means the whole batch failed.
 */
const failuresOf = (response: unknown, ids: Set<string>): Set<string> => {
  if (response === undefined || response === null) return new Set();
  const failures = (response as SQSBatchResponse).batchItemFailures;
  if (failures === undefined || failures === null) return new Set();
  if (!Array.isArray(failures)) return ids;
  const failed = new Set<string>();
  for (const failure of failures) {
    const id = (failure as { itemIdentifier?: unknown })?.itemIdentifier;
    if (typeof id !== 'string' || !ids.has(id)) return ids;
    failed.add(id);
  }
  return failed;
};

/**
 * Emulates Lambda's SQS event source mapping over any SQS endpoint: long-polls the queue, gathers
 * up to `batchSize` messages or until the batching window closes, invokes the handler with a real
 * SQS event, deletes the messages that succeeded and leaves the failed ones (those in
 * `batchItemFailures`, or all when the handler throws or times out) to come back after their
 * visibility timeout; the queue's own redrive policy moves them to the DLQ after maxReceiveCount.
 */
export const startSqsPoller = (options: SqsPollerOptions): SqsPoller => {
  // The endpoint (AWS_ENDPOINT_URL_SQS or the regional one) decides where requests go, not the
  // host written in the queue URL (fauxqs writes sqs.<region>.localhost, which may not resolve).
  const client = new SQSClient({ useQueueUrlAsEndpoint: false, ...(options.endpoint ? { endpoint: options.endpoint } : {}) });
  const abort = new AbortController();
  const report = options.onError ?? ((error, what) => console.error(`sqs poller ${options.functionName}: ${what}`, error));
  const QueueUrl = options.queueUrl;

  const receive = (max: number, waitSeconds: number) =>
    client
      .send(
        new ReceiveMessageCommand({
          QueueUrl,
          MaxNumberOfMessages: max,
          WaitTimeSeconds: waitSeconds,
          MessageSystemAttributeNames: ['All'],
          MessageAttributeNames: ['All'],
        }),
        { abortSignal: abort.signal },
      )
      .then((r) => r.Messages ?? []);

  /** Hands messages straight back to the queue (visibility 0), e.g. those that would overflow an event. */
  const release = async (messages: Message[]) => {
    for (const part of chunks(messages, RECEIVE_LIMIT)) {
      await client.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl,
          Entries: part.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle!, VisibilityTimeout: 0 })),
        }),
      );
    }
  };

  const gather = async (): Promise<Message[]> => {
    const batch: Message[] = [];
    let bytes = 0;
    let deadline: number | undefined;
    let parallel = 1;
    while (!abort.signal.aborted && batch.length < options.batchSize) {
      const left = deadline === undefined ? Infinity : deadline - Date.now();
      if (left <= 0) break;
      const waitSeconds = deadline === undefined ? LONG_POLL_SECONDS : Math.min(LONG_POLL_SECONDS, Math.floor(left / 1000)); // SQS waits 20 s at most, windows run to 300 s
      // Lambda invokes as soon as the payload reaches its limit: once the messages so far say that
      // no more of their size would fit, the batch is full. Asking for no more than would fit keeps
      // messages from being received only to be handed back (each receive counts towards the DLQ).
      const room = batch.length ? Math.floor((MAX_EVENT_BYTES - bytes) / (bytes / batch.length)) : Infinity;
      if (room < 1) break;
      const wanted = Math.min(options.batchSize - batch.length, room);
      // While receives come back full there is a backlog: fetch several tens at once, as Lambda's pollers do.
      const sizes = Array.from({ length: Math.min(parallel, Math.ceil(wanted / RECEIVE_LIMIT)) }, (_, i) =>
        Math.min(RECEIVE_LIMIT, wanted - i * RECEIVE_LIMIT),
      );
      const got = (await Promise.all(sizes.map((n) => receive(n, waitSeconds)))).flat();
      parallel = got.length === sizes.reduce((sum, n) => sum + n, 0) ? PARALLEL_RECEIVES : 1;
      const overflow: Message[] = [];
      for (const message of got) {
        const size = Buffer.byteLength(message.Body ?? '');
        if (batch.length && bytes + size > MAX_EVENT_BYTES) overflow.push(message);
        else {
          batch.push(message);
          bytes += size;
        }
      }
      if (overflow.length) {
        await release(overflow);
        break;
      }
      if (batch.length && deadline === undefined) deadline = Date.now() + options.maxBatchingWindowMs;
      // Under a second left: SQS waits in whole seconds, so short-poll until the window closes.
      else if (!got.length && waitSeconds === 0) await pause(Math.min(50, left));
    }
    return batch;
  };

  const invoke = async (records: SQSRecord[]): Promise<Set<string>> => {
    const ids = new Set(records.map((r) => r.messageId));
    try {
      const response = await invokeWithTimeout(options.handler, { Records: records }, { functionName: options.functionName, timeoutMs: options.timeoutMs });
      return options.reportBatchItemFailures === false ? new Set() : failuresOf(response, ids);
    } catch (error) {
      report(error, 'invocation failed; the whole batch returns after its visibility timeout');
      return ids;
    }
  };

  /** Deletes the records' messages; resolves with how many were deleted. */
  const remove = async (records: SQSRecord[]) => {
    let deleted = 0;
    await Promise.all(
      chunks(records, RECEIVE_LIMIT).map(async (part) => {
        const result = await client.send(
          new DeleteMessageBatchCommand({ QueueUrl, Entries: part.map((r, i) => ({ Id: String(i), ReceiptHandle: r.receiptHandle })) }),
        );
        // A message whose visibility ran out meanwhile cannot be deleted: it is delivered again.
        if (result.Failed?.length) report(new Error(JSON.stringify(result.Failed)), 'some deletes failed');
        deleted += result.Successful?.length ?? 0;
      }),
    );
    return deleted;
  };

  let enable = () => {};
  const enabled = options.enabled === false ? new Promise<void>((resolve) => (enable = resolve)) : Promise.resolve();
  const aborted = new Promise<void>((resolve) => abort.signal.addEventListener('abort', () => resolve(), { once: true }));

  const worker = async () => {
    await Promise.race([enabled, aborted]);
    for (let backoff = 100; !abort.signal.aborted; ) {
      try {
        const messages = await gather();
        if (!messages.length) continue;
        const records = messages.map((m) => toRecord(m, options.queueArn));
        const failed = await invoke(records);
        const deleted = await remove(records.filter((r) => !failed.has(r.messageId)));
        options.onSettled?.({ records: records.length, deleted });
        backoff = 100;
      } catch (error) {
        if (abort.signal.aborted) break;
        report(error, 'polling failed');
        await pause(backoff);
        backoff = Math.min(backoff * 2, 2000);
      }
    }
  };

  const workers = Array.from({ length: options.concurrency ?? 1 }, worker);
  return {
    enable: () => enable(),
    stop: async () => {
      abort.abort();
      await Promise.all(workers);
    },
  };
};
