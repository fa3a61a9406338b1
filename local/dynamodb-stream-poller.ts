import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type _Record as SdkRecord,
  type Shard,
  type ShardIteratorType,
} from '@aws-sdk/client-dynamodb-streams';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { Context, DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { randomUUID } from 'node:crypto';
import { invokeWithTimeout } from './lambda-invoke';

/** A DynamoDB-stream-triggered Lambda handler, as the runtime calls it. */
export type StreamHandler = (event: DynamoDBStreamEvent, context: Context) => Promise<DynamoDBBatchResponse | void | null>;

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
}

export interface StreamPoller {
  streamArn: string;
  /** Stops reading, lets a running invocation finish, and resolves when every shard reader has ended. */
  stop: () => Promise<void>;
}

// Lambda polls each shard of a DynamoDB stream four times a second.
const POLL_INTERVAL_MS = 250;
const SHARD_REFRESH_MS = 5000;
const GET_RECORDS_LIMIT = 1000; // GetRecords returns at most 1,000 records

const pause = (ms: number, signal: AbortSignal) =>
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

type Wire = Record<string, unknown>;

/**
 * An attribute value as it is on the wire. The SDK's DynamoDB Streams client reads an empty map
 * (`{"M":{}}`) as `{}`, which no reader can unmarshall; Lambda's event carries `{"M":{}}`.
 */
const wireValue = (value: Wire): Wire => {
  if (!Object.keys(value).length) return { M: {} };
  if (value.M) return { M: wireImage(value.M as Record<string, Wire>) };
  if (Array.isArray(value.L)) return { L: (value.L as Wire[]).map(wireValue) };
  return value;
};
const wireImage = (image: Record<string, Wire> | undefined) =>
  image && Object.fromEntries(Object.entries(image).map(([name, value]) => [name, wireValue(value)]));

/** An SDK stream record as Lambda presents it in its event (times in epoch seconds, binaries in base64). */
const toLambdaRecord = (record: SdkRecord, streamArn: string): DynamoDBRecord => {
  const { ApproximateCreationDateTime, ...rest } = record.dynamodb ?? {};
  const json = JSON.parse(JSON.stringify(rest, (_key, value: unknown) => (value instanceof Uint8Array ? Buffer.from(value).toString('base64') : value)));
  const dynamodb = { ...json, Keys: wireImage(json.Keys), NewImage: wireImage(json.NewImage), OldImage: wireImage(json.OldImage) };
  return {
    eventID: record.eventID,
    eventName: record.eventName as DynamoDBRecord['eventName'],
    eventVersion: record.eventVersion,
    eventSource: record.eventSource,
    awsRegion: record.awsRegion,
    eventSourceARN: streamArn,
    dynamodb: { ...dynamodb, ApproximateCreationDateTime: ApproximateCreationDateTime ? Math.floor(ApproximateCreationDateTime.getTime() / 1000) : undefined },
  };
};

type Outcome = { failedFrom: number } | 'ok' | 'error';

/**
 * What a batch's invocation answered, as Lambda reads a stream consumer's answer with
 * ReportBatchItemFailures: nothing, or an empty list, is success; otherwise retry from the failed
 * record with the lowest sequence number. An identifier that is missing, empty or no record's of
 * the batch makes the whole batch failed.
 */
const outcomeOf = (response: unknown, records: DynamoDBRecord[]): Outcome => {
  if (response === undefined || response === null) return 'ok';
  const failures = (response as DynamoDBBatchResponse).batchItemFailures;
  if (failures === undefined || failures === null) return 'ok';
  if (!Array.isArray(failures)) return 'error';
  if (!failures.length) return 'ok';
  let first = records.length;
  for (const failure of failures) {
    const id = (failure as { itemIdentifier?: unknown })?.itemIdentifier;
    const index = typeof id === 'string' && id ? records.findIndex((r) => r.dynamodb?.SequenceNumber === id) : -1;
    if (index < 0) return 'error';
    first = Math.min(first, index);
  }
  return { failedFrom: first };
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
  const report = options.onError ?? ((error, what) => console.error(`stream poller ${options.functionName}: ${what}`, error));
  const retryDelay = options.retryDelayMs ?? ((attempt: number) => Math.min(100 * 2 ** (attempt - 1), 2000));

  if (!options.streamArn && !options.tableName) throw new Error('A stream poller needs a tableName or a streamArn.');
  const streamArn = options.streamArn ?? (await currentStreamOf(options.tableName!));

  // The table's partition key (the stream's key schema): with a parallelization factor, its value
  // picks the concurrent batch a record joins.
  let partitionKey: string | undefined;
  const listShards = async () => {
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

  const iteratorOf = async (ShardId: string, ShardIteratorType: ShardIteratorType, SequenceNumber?: string) =>
    (await streams.send(new GetShardIteratorCommand({ StreamArn: streamArn, ShardId, ShardIteratorType, SequenceNumber }))).ShardIterator;

  const invoke = async (records: DynamoDBRecord[]): Promise<Outcome> => {
    try {
      const response = await invokeWithTimeout(
        options.handler,
        { Records: records },
        { functionName: options.functionName, functionArn, timeoutMs: options.timeoutMs },
      );
      return options.reportBatchItemFailures === false ? 'ok' : outcomeOf(response, records);
    } catch (error) {
      report(error, 'invocation failed; the batch is retried');
      return 'error';
    }
  };

  /** Lambda's invocation record for a stream batch it gives up on, sent to the on-failure queue (retried until it is sent). */
  const discard = async (shardId: string, records: DynamoDBRecord[], invokeCount: number) => {
    const arrival = (r: DynamoDBRecord) => new Date((r.dynamodb?.ApproximateCreationDateTime ?? 0) * 1000).toISOString();
    const description = {
      requestContext: {
        requestId: randomUUID(),
        functionArn,
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
        streamArn,
      },
    };
    report(new Error(JSON.stringify(description.DDBStreamBatchInfo)), `batch failed ${invokeCount} times; its description goes to the on-failure destination`);
    if (!options.onFailureQueueUrl) return;
    for (let attempt = 1; !abort.signal.aborted; attempt++) {
      try {
        await sqs.send(new SendMessageCommand({ QueueUrl: options.onFailureQueueUrl, MessageBody: JSON.stringify(description) }));
        return;
      } catch (error) {
        report(error, 'the on-failure destination refused a batch description');
        await pause(retryDelay(attempt), abort.signal);
      }
    }
  };

  /** Invokes the handler until the batch succeeds or is discarded; returns when the shard may move past it. */
  const deliver = async (shardId: string, records: DynamoDBRecord[], retries = 0): Promise<void> => {
    let batch = records;
    for (let attempt = retries; !abort.signal.aborted; ) {
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
      await pause(retryDelay(attempt), abort.signal);
    }
  };

  const factor = Math.min(10, Math.max(1, Math.floor(options.parallelizationFactor ?? 1)));
  /** Which of a shard's concurrent batches a record joins: one per partition key value (the whole key when the schema is unknown). */
  const laneOf = (record: DynamoDBRecord) => {
    if (factor === 1) return 0;
    const keys = record.dynamodb?.Keys ?? {};
    const key = JSON.stringify(partitionKey && keys[partitionKey] ? keys[partitionKey] : keys);
    let hash = 0x811c9dc5; // FNV-1a
    for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
    return (hash >>> 0) % factor;
  };

  /**
   * Reads a shard and hands its records to `factor` lanes, each invoking the handler with one batch
   * at a time (so records of a partition key are handled in order, each after the one before it
   * succeeded or was discarded). Reading goes on while batches run, up to `batchSize` × `factor`
   * records waiting: a batch that ends finds the next one gathered.
   */
  const readShard = async (shard: Shard, start: ShardIteratorType, opened?: string) => {
    const shardId = shard.ShardId!;
    let iterator = opened ?? (await iteratorOf(shardId, start));
    let lastRead: string | undefined;
    const lanes = Array.from({ length: factor }, () => ({
      waiting: [] as Array<{ record: DynamoDBRecord; at: number }>,
      running: undefined as Promise<void> | undefined,
    }));
    const buffered = () => lanes.reduce((n, lane) => n + lane.waiting.length, 0);
    // A lane that ends its batch wakes the reader, which may be waiting for room or for it.
    let ended = false;
    let wake: (() => void) | undefined;
    const laneEnded = () => {
      ended = true;
      wake?.();
    };
    /** Starts a batch on each idle lane whose records fill one, waited the batching window, or end a closed shard. */
    const dispatch = (closed: boolean) => {
      for (const lane of lanes) {
        if (lane.running || !lane.waiting.length) continue;
        if (lane.waiting.length < options.batchSize && Date.now() < lane.waiting[0].at + options.maxBatchingWindowMs && !closed) continue;
        const batch = lane.waiting.splice(0, options.batchSize).map((w) => w.record);
        lane.running = deliver(shardId, batch)
          .catch((error: unknown) => report(error, 'a batch failed unexpectedly'))
          .finally(() => {
            lane.running = undefined;
            laneEnded();
          });
      }
    };
    /** Until a lane ends, `ms` pass, or the poller stops. */
    const idle = (ms: number) =>
      new Promise<void>((resolve) => {
        if (ended || abort.signal.aborted) return resolve();
        const done = () => {
          clearTimeout(timer);
          abort.signal.removeEventListener('abort', done);
          wake = undefined;
          resolve();
        };
        const timer = Number.isFinite(ms) ? setTimeout(done, ms) : undefined;
        wake = done;
        abort.signal.addEventListener('abort', done, { once: true });
      });
    for (let backoff = 100; !abort.signal.aborted; ) {
      try {
        ended = false;
        const closed = iterator === undefined;
        const room = options.batchSize * factor - buffered();
        let got = 0;
        if (!closed && room > 0) {
          const page = await streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: Math.min(GET_RECORDS_LIMIT, room) }));
          iterator = page.NextShardIterator;
          const records = page.Records ?? [];
          got = records.length;
          if (got) lastRead = records.at(-1)!.dynamodb?.SequenceNumber;
          const at = Date.now();
          for (const record of records.map((r) => toLambdaRecord(r, streamArn))) {
            if (!options.filter || options.filter(record)) lanes[laneOf(record)].waiting.push({ record, at });
          }
        }
        dispatch(closed);
        // A closed shard read to its end and handled: its children take over.
        if (closed && !buffered() && lanes.every((lane) => !lane.running)) return;
        if (!got || room <= 0 || closed) {
          const windows = lanes
            .filter((lane) => !lane.running && lane.waiting.length)
            .map((lane) => lane.waiting[0].at + options.maxBatchingWindowMs - Date.now());
          await idle(Math.max(0, Math.min(!closed && room > 0 ? POLL_INTERVAL_MS : Infinity, ...windows)));
        }
        backoff = 100;
      } catch (error) {
        if (abort.signal.aborted) break;
        report(error, 'reading the shard failed');
        await pause(backoff, abort.signal);
        backoff = Math.min(backoff * 2, 2000);
        // An expired or trimmed iterator: carry on after the last record read (the records in hand are kept).
        iterator = await iteratorOf(shardId, lastRead ? 'AFTER_SEQUENCE_NUMBER' : start, lastRead).catch(() => iterator);
      }
    }
    await Promise.all(lanes.map((lane) => lane.running));
  };

  // Shards are read once their parent has been read to its end, so an item's records stay in order.
  const readers = new Map<string, Promise<void>>();
  const startReaders = (shards: Shard[], startOf: (shard: Shard) => ShardIteratorType | undefined, opened = new Map<string, string | undefined>()) => {
    const known = new Set(shards.map((s) => s.ShardId!));
    for (let progress = true; progress; ) {
      progress = false;
      for (const shard of shards) {
        const id = shard.ShardId!;
        const parent = shard.ParentShardId && known.has(shard.ParentShardId) ? shard.ParentShardId : undefined;
        if (readers.has(id) || (parent && !readers.has(parent))) continue;
        progress = true;
        const start = startOf(shard);
        const after = parent ? readers.get(parent)! : Promise.resolve();
        const read = () => (abort.signal.aborted || !start ? undefined : readShard(shard, start, opened.get(id)));
        readers.set(
          id,
          after.then(read).catch((error: unknown) => report(error, `shard ${id} stopped`)),
        );
      }
    }
  };

  // LATEST means "from now": the open shards get their iterators before this resolves, so nothing
  // written afterwards is missed; shards already closed are skipped. TRIM_HORIZON reads all retained.
  const initial = options.startingPosition ?? 'LATEST';
  const shards = await listShards();
  const isOpen = (shard: Shard) => !shard.SequenceNumberRange?.EndingSequenceNumber;
  const opened = new Map<string, string | undefined>();
  if (initial === 'LATEST') {
    await Promise.all(shards.filter(isOpen).map(async (shard) => opened.set(shard.ShardId!, await iteratorOf(shard.ShardId!, 'LATEST'))));
  }
  startReaders(shards, (shard) => (initial === 'TRIM_HORIZON' ? 'TRIM_HORIZON' : isOpen(shard) ? 'LATEST' : undefined), opened);

  const refresher = (async () => {
    while (!abort.signal.aborted) {
      await pause(SHARD_REFRESH_MS, abort.signal);
      if (abort.signal.aborted) break;
      try {
        startReaders(await listShards(), () => 'TRIM_HORIZON');
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
      await Promise.all(readers.values());
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
