import { type DynamoDBStreamsClient, GetRecordsCommand, type Shard, type ShardIteratorType } from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBRecord } from 'aws-lambda';
import { pause } from './dynamodb-stream-delivery';
import { toLambdaRecord } from './dynamodb-stream-records';
import type { TableWrites } from './dynamodb-writes';

// Lambda polls each shard of a DynamoDB stream four times a second.
const POLL_INTERVAL_MS = 250;
/**
 * Between polls of a shard that nothing was written to, where the process tells its writes
 * (local/dynamodb-writes.ts): records that no write here made (the engine's TTL deletions, another
 * process's writes) are read within this time, the others within POLL_INTERVAL_MS as on Lambda.
 */
export const IDLE_POLL_INTERVAL_MS = 1000;
const GET_RECORDS_LIMIT = 1000; // GetRecords returns at most 1,000 records

/** What reading a stream's shards takes: the stream, the batching settings, and where batches go. */
export interface ShardReading {
  streams: DynamoDBStreamsClient;
  streamArn: string;
  /** Most records per invocation. */
  batchSize: number;
  /** Longest wait, from the first record, to fill a batch. */
  maxBatchingWindowMs: number;
  /** Batches of one shard handled at once (1…10). */
  factor: number;
  /** The table's partition key, once the stream's description has named it. */
  partitionKey: () => string | undefined;
  filter?: (record: DynamoDBRecord) => boolean;
  iteratorOf: (shardId: string, type: ShardIteratorType, sequenceNumber?: string) => Promise<string | undefined>;
  /** The process's writes, when it tells them: an idle shard is then polled every `idlePollMs` only, and after a write at once. */
  writes?: TableWrites;
  idlePollMs: number;
  /** Resolves when the shard may move past the batch. */
  deliver: (shardId: string, records: DynamoDBRecord[]) => Promise<void>;
  signal: AbortSignal;
  report: (error: unknown, what: string) => void;
}

/** Which of a shard's concurrent batches a record joins: one per partition key value (the whole key when the schema is unknown). */
const laneSelector = (factor: number, partitionKey: () => string | undefined) => (record: DynamoDBRecord) => {
  if (factor === 1) return 0;
  const keys = record.dynamodb?.Keys ?? {};
  const name = partitionKey();
  const key = JSON.stringify(name && keys[name] ? keys[name] : keys);
  let hash = 0x811c9dc5; // FNV-1a
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  return (hash >>> 0) % factor;
};

/**
 * A shard's `factor` lanes, each running one batch at a time, and the records waiting for them. A
 * lane that ends its batch wakes the reader, which may be waiting for room or for it.
 */
const shardLanes = (reading: ShardReading, shardId: string) => {
  const { signal } = reading;
  const laneOf = laneSelector(reading.factor, reading.partitionKey);
  const lanes = Array.from({ length: reading.factor }, () => ({
    waiting: [] as Array<{ record: DynamoDBRecord; at: number }>,
    running: undefined as Promise<void> | undefined,
  }));
  const buffered = () => lanes.reduce((n, lane) => n + lane.waiting.length, 0);
  let ended = false;
  let wake: (() => void) | undefined;
  const laneEnded = () => {
    ended = true;
    wake?.();
  };
  return {
    buffered,
    /** Forgets that a lane ended: the reader is about to look at them again. */
    rearm: () => {
      ended = false;
    },
    /** Queues records read at `at` on their lanes. */
    add: (records: DynamoDBRecord[], at: number) => {
      for (const record of records) lanes[laneOf(record)].waiting.push({ record, at });
    },
    /** Starts a batch on each idle lane whose records fill one, waited the batching window, or end a closed shard. */
    dispatch: (closed: boolean) => {
      for (const lane of lanes) {
        if (lane.running || !lane.waiting.length) continue;
        if (lane.waiting.length < reading.batchSize && Date.now() < lane.waiting[0].at + reading.maxBatchingWindowMs && !closed) continue;
        const batch = lane.waiting.splice(0, reading.batchSize).map((w) => w.record);
        lane.running = reading
          .deliver(shardId, batch)
          .catch((error: unknown) => reading.report(error, 'a batch failed unexpectedly'))
          .finally(() => {
            lane.running = undefined;
            laneEnded();
          });
      }
    },
    /** Nothing waits and nothing runs. */
    drained: () => !buffered() && lanes.every((lane) => !lane.running),
    /** How long until each idle lane's batching window closes. */
    windows: () => lanes.filter((lane) => !lane.running && lane.waiting.length).map((lane) => lane.waiting[0].at + reading.maxBatchingWindowMs - Date.now()),
    /** Until a lane ends, `ms` pass, or the poller stops. */
    idle: (ms: number) =>
      new Promise<void>((resolve) => {
        if (ended || signal.aborted) return resolve();
        const done = () => {
          clearTimeout(timer);
          signal.removeEventListener('abort', done);
          wake = undefined;
          resolve();
        };
        const timer = Number.isFinite(ms) ? setTimeout(done, ms) : undefined;
        wake = done;
        signal.addEventListener('abort', done, { once: true });
      }),
    settled: () => Promise.all(lanes.map((lane) => lane.running)),
    /** Ends the reader's wait now (a write to poll for). */
    interrupt: () => wake?.(),
  };
};

/**
 * When a shard is polled next: POLL_INTERVAL_MS after the last poll as on Lambda, or where the
 * process tells its writes, that long after the last poll once a write came and `idlePollMs` after
 * it otherwise. A write wakes the reader then (`lanes.interrupt`).
 */
const pollTimer = (reading: ShardReading, interrupt: () => void) => {
  let lastPoll = 0;
  let written = false;
  let timer: NodeJS.Timeout | undefined;
  const unsubscribe = reading.writes?.subscribe(() => {
    if (written) return;
    written = true;
    timer = setTimeout(interrupt, Math.max(0, lastPoll + POLL_INTERVAL_MS - Date.now()));
  });
  return {
    /** A poll starts: writes from now on call for the next one. */
    polling: () => {
      clearTimeout(timer);
      written = false;
      lastPoll = Date.now();
    },
    /** Milliseconds until the next poll. */
    next: () => (reading.writes && !written ? lastPoll + reading.idlePollMs : lastPoll + POLL_INTERVAL_MS) - Date.now(),
    stop: () => {
      clearTimeout(timer);
      unsubscribe?.();
    },
  };
};

/**
 * Reads a shard and hands its records to `factor` lanes, each invoking the handler with one batch
 * at a time (so records of a partition key are handled in order, each after the one before it
 * succeeded or was discarded). Reading goes on while batches run, up to `batchSize` × `factor`
 * records waiting: a batch that ends finds the next one gathered.
 */
export const shardReader = (reading: ShardReading) => async (shard: Shard, start: ShardIteratorType, opened?: string) => {
  const { signal, streams } = reading;
  const shardId = shard.ShardId!;
  let iterator = opened ?? (await reading.iteratorOf(shardId, start));
  let lastRead: string | undefined;
  const lanes = shardLanes(reading, shardId);
  const polls = pollTimer(reading, lanes.interrupt);
  for (let backoff = 100; !signal.aborted; ) {
    try {
      lanes.rearm();
      const closed = iterator === undefined;
      const room = reading.batchSize * reading.factor - lanes.buffered();
      let got = 0;
      if (!closed && room > 0) {
        polls.polling();
        const page = await streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: Math.min(GET_RECORDS_LIMIT, room) }));
        iterator = page.NextShardIterator;
        const records = page.Records ?? [];
        got = records.length;
        if (got) lastRead = records.at(-1)!.dynamodb?.SequenceNumber;
        const at = Date.now();
        lanes.add(
          records.map((r) => toLambdaRecord(r, reading.streamArn)).filter((record) => !reading.filter || reading.filter(record)),
          at,
        );
      }
      lanes.dispatch(closed);
      // A closed shard read to its end and handled: its children take over.
      if (closed && lanes.drained()) break;
      if (!got || room <= 0 || closed) {
        await lanes.idle(Math.max(0, Math.min(!closed && room > 0 ? polls.next() : Infinity, ...lanes.windows())));
      }
      backoff = 100;
    } catch (error) {
      if (signal.aborted) break;
      // DynamoDB Local answers a new table's first records so at times (aws/aws-sdk-java#2923): the
      // iterator is opened again below and nothing is lost, so it is not reported as a failure.
      if ((error as Error).name !== 'TrimmedDataAccessException') reading.report(error, 'reading the shard failed');
      await pause(backoff, signal);
      backoff = Math.min(backoff * 2, 2000);
      // An expired or trimmed iterator: carry on after the last record read (the records in hand are kept).
      iterator = await reading.iteratorOf(shardId, lastRead ? 'AFTER_SEQUENCE_NUMBER' : start, lastRead).catch(() => iterator);
    }
  }
  polls.stop();
  await lanes.settled();
};

/**
 * The shard readers of a stream, by shard ID. Shards are read once their parent has been read to
 * its end, so an item's records stay in order.
 */
export const shardReaders = (readShard: ReturnType<typeof shardReader>, signal: AbortSignal, report: (error: unknown, what: string) => void) => {
  const readers = new Map<string, Promise<void>>();
  /** Starts a reader for each shard not read yet whose parent's reader has started (or which has none known), from where `startOf` says. */
  const start = (shards: Shard[], startOf: (shard: Shard) => ShardIteratorType | undefined, opened = new Map<string, string | undefined>()) => {
    const known = new Set(shards.map((s) => s.ShardId!));
    for (let progress = true; progress; ) {
      progress = false;
      for (const shard of shards) {
        const id = shard.ShardId!;
        const parent = shard.ParentShardId && known.has(shard.ParentShardId) ? shard.ParentShardId : undefined;
        if (readers.has(id) || (parent && !readers.has(parent))) continue;
        progress = true;
        const from = startOf(shard);
        const after = parent ? readers.get(parent)! : Promise.resolve();
        const read = () => (signal.aborted || !from ? undefined : readShard(shard, from, opened.get(id)));
        readers.set(
          id,
          after.then(read).catch((error: unknown) => report(error, `shard ${id} stopped`)),
        );
      }
    }
  };
  return { start, ended: () => Promise.all(readers.values()) };
};
