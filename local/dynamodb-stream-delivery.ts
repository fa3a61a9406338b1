import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { Context, DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { randomUUID } from 'node:crypto';
import { outcomeOf, type Outcome } from './dynamodb-stream-records';
import { invokeWithTimeout } from './lambda-invoke';

/** A DynamoDB-stream-triggered Lambda handler, as the runtime calls it. */
export type StreamHandler = (event: DynamoDBStreamEvent, context: Context) => Promise<DynamoDBBatchResponse | void | null>;

/** Waits `ms`, or less when `signal` aborts. */
export const pause = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', done);
      resolve();
    }, ms);
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    signal.addEventListener('abort', done, { once: true });
  });

/** What delivering a stream's batches takes: the consumer, its retry settings and its on-failure destination. */
export interface BatchDeliveryOptions {
  handler: StreamHandler;
  functionName: string;
  functionArn: string;
  timeoutMs: number;
  /** Whether the handler's answer is read for partial batch failures (default true). */
  reportBatchItemFailures?: boolean;
  bisectBatchOnError: boolean;
  retryAttempts: number;
  onFailureQueueUrl?: string;
  streamArn: string;
  sqs: SQSClient;
  signal: AbortSignal;
  retryDelay: (attempt: number) => number;
  report: (error: unknown, what: string) => void;
}

/** Lambda's invocation record for a stream batch it gives up on, as the on-failure destination receives it. */
const failedBatchDescription = (options: BatchDeliveryOptions, shardId: string, records: DynamoDBRecord[], invokeCount: number) => {
  const arrival = (r: DynamoDBRecord) => new Date((r.dynamodb?.ApproximateCreationDateTime ?? 0) * 1000).toISOString();
  return {
    requestContext: {
      requestId: randomUUID(),
      functionArn: options.functionArn,
      condition: 'RetryAttemptsExhausted',
      approximateInvokeCount: invokeCount,
    },
    responseContext: { statusCode: 200, executedVersion: '$LATEST', functionError: 'Unhandled' },
    version: '1.0',
    timestamp: new Date().toISOString(),
    DDBStreamBatchInfo: {
      shardId,
      startSequenceNumber: records[0].dynamodb?.SequenceNumber,
      endSequenceNumber: records.at(-1)!.dynamodb?.SequenceNumber,
      approximateArrivalOfFirstRecord: arrival(records[0]),
      approximateArrivalOfLastRecord: arrival(records.at(-1)!),
      batchSize: records.length,
      streamArn: options.streamArn,
    },
  };
};

/**
 * Delivers a shard's batches to the handler as Lambda does: a failed batch is retried from the
 * first failed record it reports (ReportBatchItemFailures), or, when the invocation itself fails,
 * halved when bisecting is on (which does not count as a retry). After `retryAttempts` retries the
 * batch's description goes to the on-failure queue and the shard moves on. The function it returns
 * resolves when the shard may move past the batch.
 */
export const batchDelivery = (options: BatchDeliveryOptions) => {
  const { signal, report } = options;

  const invoke = async (records: DynamoDBRecord[]): Promise<Outcome> => {
    try {
      const response = await invokeWithTimeout(
        options.handler,
        { Records: records },
        { functionName: options.functionName, functionArn: options.functionArn, timeoutMs: options.timeoutMs },
      );
      return options.reportBatchItemFailures === false ? 'ok' : outcomeOf(response, records);
    } catch (error) {
      report(error, 'invocation failed; the batch is retried');
      return 'error';
    }
  };

  /** Lambda's invocation record for a stream batch it gives up on, sent to the on-failure queue (retried until it is sent). */
  const discard = async (shardId: string, records: DynamoDBRecord[], invokeCount: number) => {
    const description = failedBatchDescription(options, shardId, records, invokeCount);
    report(new Error(JSON.stringify(description.DDBStreamBatchInfo)), `batch failed ${invokeCount} times; its description goes to the on-failure destination`);
    if (!options.onFailureQueueUrl) return;
    for (let attempt = 1; !signal.aborted; attempt++) {
      try {
        await options.sqs.send(new SendMessageCommand({ QueueUrl: options.onFailureQueueUrl, MessageBody: JSON.stringify(description) }));
        return;
      } catch (error) {
        report(error, 'the on-failure destination refused a batch description');
        await pause(options.retryDelay(attempt), signal);
      }
    }
  };

  /** Invokes the handler until the batch succeeds or is discarded; returns when the shard may move past it. */
  const deliver = async (shardId: string, records: DynamoDBRecord[], retries = 0): Promise<void> => {
    let batch = records;
    for (let attempt = retries; !signal.aborted; ) {
      const outcome = await invoke(batch);
      if (outcome === 'ok') return;
      if (outcome === 'error' && options.bisectBatchOnError && batch.length > 1) {
        const half = Math.ceil(batch.length / 2);
        await deliver(shardId, batch.slice(0, half), attempt);
        await deliver(shardId, batch.slice(half), attempt);
        return;
      }
      if (outcome !== 'error') {
        report(
          new Error(`record ${batch[outcome.failedFrom].dynamodb?.SequenceNumber} failed`),
          'the handler reported failed records; the batch is retried from the first',
        );
        batch = batch.slice(outcome.failedFrom);
      }
      if (attempt >= options.retryAttempts) return discard(shardId, batch, attempt + 1);
      attempt++;
      await pause(options.retryDelay(attempt), signal);
    }
  };

  return (shardId: string, records: DynamoDBRecord[]) => deliver(shardId, records);
};
