import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DescribeStreamCommand, DynamoDBStreamsClient, GetShardIteratorCommand, type Shard, type ShardIteratorType } from '@aws-sdk/client-dynamodb-streams';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBRecord } from 'aws-lambda';
import { batchDelivery, pause, type StreamHandler } from './dynamodb-stream-delivery';
import { IDLE_POLL_INTERVAL_MS, shardReader, shardReaders } from './dynamodb-stream-shards';
import { tableWrites } from './dynamodb-writes';

export type { StreamHandler } from './dynamodb-stream-delivery';

export interface StreamPollerOptions {
  /** The table whose current stream is read (found with DescribeTable; it must have one), unless `streamArn` names the stream. */
  tableName?: string;
  /** The stream, by its ARN, as an event source mapping names it (no DescribeTable call). */
  streamArn?: string;
  /** Most records per invocation. */
  batchSize: number;
  /** Longest wait, from the first record, to fill a batch. */
  maxBatchingWindowMs: number;
  /**
   * Batches of one shard handled at once (Lambda's ParallelizationFactor, 1…10; default 1). Records
   * of one partition key always go to the same one of them, so they are still handled in order.
   */
  parallelizationFactor?: number;
  /** Retries of a failing batch before it goes to the on-failure destination (bisecting does not count). */
  retryAttempts: number;
  /** Split a batch whose invocation failed (threw, timed out, answered malformed) in two. */
  bisectBatchOnError: boolean;
  /** The handler's timeout: an invocation that runs longer counts as failed, as Lambda would stop it. */
  timeoutMs: number;
  functionName: string;
  handler: StreamHandler;
  /**
   * Whether the handler's answer is read for partial batch failures (FunctionResponseTypes:
   * ReportBatchItemFailures). Without it Lambda ignores the answer: only a failed invocation fails
   * the batch. Default true.
   */
  reportBatchItemFailures?: boolean;
  /** Which records reach the handler (the event source mapping's filter criteria); all when absent. */
  filter?: (record: DynamoDBRecord) => boolean;
  /** SQS queue URL of the on-failure destination: the description of a batch that kept failing goes there. */
  onFailureQueueUrl?: string;
  /** Where reading starts on the shards open at start: LATEST (default) or TRIM_HORIZON. Shards that appear later are read from their start. */
  startingPosition?: 'LATEST' | 'TRIM_HORIZON';
  /** Pause between a retry and the next, by attempt (1, 2, …); Lambda retries at once, this keeps a failing consumer from spinning. */
  retryDelayMs?: (attempt: number) => number;
  /** A failed read, invocation or destination send (the poller carries on). */
  onError?: (error: unknown, what: string) => void;
  /**
   * Where the poller's own calls go, when not to the SDK's endpoint variables: the cloud-assembly
   * runtime points them at a proxy that checks each against the consumer's role, as Lambda reads
   * the stream and sends to the destination with the function's role.
   */
  endpoints?: { dynamodbStreams?: string; sqs?: string };
  /** The consumer's ARN in its invocation context and in the on-failure descriptions. */
  functionArn?: string;
  /**
   * Between polls of an idle shard, in a process that tells its writes (local/dynamodb-writes.ts;
   * IDLE_POLL_INTERVAL_MS by default): a write there is read at once, within Lambda's 250 ms of the
   * poll before. A process that tells none polls every 250 ms, as Lambda does.
   */
  idlePollMs?: number;
}

export interface StreamPoller {
  streamArn: string;
  /** Stops reading, lets a running invocation finish, and resolves when every shard reader has ended. */
  stop: () => Promise<void>;
}

const SHARD_REFRESH_MS = 5000;

/** The stream's shards (all pages of DescribeStream), and the table's partition key once a page has named it. */
const shardLister = (streams: DynamoDBStreamsClient, streamArn: string) => {
  // The table's partition key (the stream's key schema): with a parallelization factor, its value
  // picks the concurrent batch a record joins.
  let partitionKey: string | undefined;
  const list = async () => {
    const shards: Shard[] = [];
    let ExclusiveStartShardId: string | undefined;
    do {
      const { StreamDescription } = await streams.send(new DescribeStreamCommand({ StreamArn: streamArn, ExclusiveStartShardId }));
      partitionKey ??= StreamDescription?.KeySchema?.find((key) => key.KeyType === 'HASH')?.AttributeName;
      shards.push(...(StreamDescription?.Shards ?? []));
      ExclusiveStartShardId = StreamDescription?.LastEvaluatedShardId;
    } while (ExclusiveStartShardId);
    return shards;
  };
  return { list, partitionKey: () => partitionKey };
};

/**
 * Emulates Lambda's DynamoDB stream event source mapping over any DynamoDB Streams endpoint
 * (AWS_ENDPOINT_URL_DYNAMODB_STREAMS, or else AWS_ENDPOINT_URL_DYNAMODB: DynamoDB Local serves
 * both). One reader per shard, parents before children, reads the records in order, keeps those the
 * filter accepts, and invokes the handler with batches of up to `batchSize` records or what the
 * batching window gathered, `parallelizationFactor` batches at a time per shard (one by default),
 * records of one partition key always in the same of those and so handled in order. A failed
 * batch is retried as Lambda does: from the first failed record it reports (ReportBatchItemFailures), or, when the invocation itself fails, halved when bisecting is on
 * (which does not count as a retry). After `retryAttempts` retries the batch's description
 * (Lambda's invocation record, with the shard and sequence numbers) goes to the on-failure queue and
 * the shard moves on. Checkpoints live in memory: a new poller starts at `startingPosition`.
 * Resolves once every open shard has its iterator, so that writes made afterwards are read.
 */
export const startDynamoDbStreamPoller = async (options: StreamPollerOptions): Promise<StreamPoller> => {
  const endpoint = options.endpoints?.dynamodbStreams ?? (process.env.AWS_ENDPOINT_URL_DYNAMODB_STREAMS ? undefined : process.env.AWS_ENDPOINT_URL_DYNAMODB);
  const streams = new DynamoDBStreamsClient(endpoint ? { endpoint } : {});
  const sqs = new SQSClient({ useQueueUrlAsEndpoint: false, ...(options.endpoints?.sqs ? { endpoint: options.endpoints.sqs } : {}) });
  const functionArn = options.functionArn ?? `arn:aws:lambda:local:000000000000:function:${options.functionName}`;
  const abort = new AbortController();
  const { signal } = abort;
  const report = options.onError ?? ((error, what) => console.error(`stream poller ${options.functionName}: ${what}`, error));
  const retryDelay = options.retryDelayMs ?? ((attempt: number) => Math.min(100 * 2 ** (attempt - 1), 2000));

  if (!options.streamArn && !options.tableName) throw new Error('A stream poller needs a tableName or a streamArn.');
  const streamArn = options.streamArn ?? (await currentStreamOf(options.tableName!));

  const shards = shardLister(streams, streamArn);
  const iteratorOf = async (ShardId: string, ShardIteratorType: ShardIteratorType, SequenceNumber?: string) =>
    (await streams.send(new GetShardIteratorCommand({ StreamArn: streamArn, ShardId, ShardIteratorType, SequenceNumber }))).ShardIterator;
  const deliver = batchDelivery({ ...options, functionArn, streamArn, sqs, signal, retryDelay, report });
  const readShard = shardReader({
    streams,
    streamArn,
    batchSize: options.batchSize,
    maxBatchingWindowMs: options.maxBatchingWindowMs,
    factor: Math.min(10, Math.max(1, Math.floor(options.parallelizationFactor ?? 1))),
    partitionKey: shards.partitionKey,
    filter: options.filter,
    iteratorOf,
    deliver,
    signal,
    report,
    writes: tableWrites(),
    idlePollMs: options.idlePollMs ?? IDLE_POLL_INTERVAL_MS,
  });
  const readers = shardReaders(readShard, signal, report);

  // LATEST means "from now": the open shards get their iterators before this resolves, so nothing
  // written afterwards is missed; shards already closed are skipped. TRIM_HORIZON reads all retained.
  const initial = options.startingPosition ?? 'LATEST';
  const found = await shards.list();
  const isOpen = (shard: Shard) => !shard.SequenceNumberRange?.EndingSequenceNumber;
  const opened = new Map<string, string | undefined>();
  if (initial === 'LATEST') {
    await Promise.all(found.filter(isOpen).map(async (shard) => opened.set(shard.ShardId!, await iteratorOf(shard.ShardId!, 'LATEST'))));
  }
  readers.start(found, (shard) => (initial === 'TRIM_HORIZON' ? 'TRIM_HORIZON' : isOpen(shard) ? 'LATEST' : undefined), opened);

  // Shards that appear later are read from their start.
  const refresher = (async () => {
    while (!signal.aborted) {
      await pause(SHARD_REFRESH_MS, signal);
      if (signal.aborted) break;
      try {
        readers.start(await shards.list(), () => 'TRIM_HORIZON');
      } catch (error) {
        report(error, 'listing the shards failed');
      }
    }
  })();

  return {
    streamArn,
    stop: async () => {
      abort.abort();
      await refresher;
      await readers.ended();
      streams.destroy();
      sqs.destroy();
    },
  };
};

/** The stream a table has now. @throws Error when its stream is off */
const currentStreamOf = async (tableName: string): Promise<string> => {
  const dynamodb = new DynamoDBClient({});
  try {
    const { Table } = await dynamodb.send(new DescribeTableCommand({ TableName: tableName }));
    if (!Table?.LatestStreamArn || !Table.StreamSpecification?.StreamEnabled) throw new Error(`Table ${tableName} has no stream enabled.`);
    return Table.LatestStreamArn;
  } finally {
    dynamodb.destroy();
  }
};

/**
 * The event source mapping's filter criteria as a predicate: the record's kind of change is one of
 * `eventNames` and its item's sort key (`sk`) starts with one of `sortKeyPrefixes`, as the stack's
 * FilterCriteria say (lib/constructs/registry-stream.ts builds them from the same definition).
 */
export const streamFilterOf =
  (filter: { sortKeyPrefixes: readonly string[]; eventNames: readonly string[] }) =>
  (record: DynamoDBRecord): boolean => {
    const sk = record.dynamodb?.Keys?.sk?.S;
    return filter.eventNames.includes(record.eventName ?? '') && sk !== undefined && filter.sortKeyPrefixes.some((prefix) => sk.startsWith(prefix));
  };
