import { CreateTableCommand, DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, QueryCommand, TransactWriteCommand, type QueryCommandInput, type QueryCommandOutput } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../../shared/clients';
import { PayloadTooLargeError, ValidationError, type ErrorDetail } from '../../shared/errors';
import type { DataPoint, TimeseriesQuery, TimeseriesStore, WriteResult } from './index';
import { KEY_PART, KEY_TIMESTAMP, TIMESERIES_KEY, pointKey, queryPartitions } from './keys';

/**
 * A data point as stored (keys in `./keys.ts`). `timestamp_device` is the first 24 characters of
 * `sk`; the payload is kept as JSON text, exactly as received.
 */
interface PointItem {
  pk: string;
  sk: string;
  device_id: string;
  tag: string;
  fleet_id: string;
  timestamp_in: string;
  payload: string;
  [attribute: string]: unknown;
}

// DynamoDB limits: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html
const ITEM_MAX_BYTES = 400 * 1024;
const TRANSACTION_MAX_ITEMS = 100;
const TRANSACTION_MAX_BYTES = 4 * 1024 * 1024;
const BATCH_GET_MAX_KEYS = 100;
/** Items per Query page once a shard is known to hold more: ~250 KB of typical points. */
const PAGE_MAX = 1000;
const MAX_ATTEMPTS = 8;

// Cancellation reasons that go away on their own (a concurrent transaction on the same item, throttling).
const TRANSIENT_REASONS = new Set(['TransactionConflict', 'ThrottlingError', 'ProvisionedThroughputExceeded', 'RequestLimitExceeded']);

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const backoff = (attempt: number) => pause(Math.random() * Math.min(1000, 20 * 2 ** attempt));

/** The timestamp as keys hold it, or undefined when it is not a date the keys can sort. */
const keyTimestamp = (value: unknown): string | undefined => {
  if (typeof value !== 'string') return undefined;
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) return undefined;
  const iso = new Date(ms).toISOString();
  return KEY_TIMESTAMP.test(iso) ? iso : undefined;
};

const itemBytes = (item: PointItem) =>
  Object.entries(item).reduce((sum, [name, value]) => sum + Buffer.byteLength(name) + Buffer.byteLength(String(value)), 0);

/**
 * The items of a write, checked all at once so that a bad point stores nothing.
 * @throws ValidationError naming each bad field; PayloadTooLargeError when an item would pass 400 KB.
 */
const toItems = (points: DataPoint[]): PointItem[] => {
  const details: ErrorDetail[] = [];
  const bad = (i: number, field: string, message: string) => details.push({ field: `points[${i}].${field}`, message });
  const items = points.map((point, i) => {
    for (const field of ['workspace_id', 'fleet_id', 'device_id', 'tag'] as const) {
      if (typeof point[field] !== 'string' || !KEY_PART.test(point[field])) bad(i, field, 'Must be 1 to 128 letters, digits, "_", "." or "-".');
    }
    const timestamp_device = keyTimestamp(point.timestamp_device);
    const timestamp_in = keyTimestamp(point.timestamp_in);
    if (!timestamp_device) bad(i, 'timestamp_device', 'Must be an RFC 3339 date in years 0000–9999.');
    if (!timestamp_in) bad(i, 'timestamp_in', 'Must be an RFC 3339 date in years 0000–9999.');
    const payload = JSON.stringify(point.payload) as string | undefined;
    if (payload === undefined) bad(i, 'payload', 'Must be a JSON value.');
    const item: PointItem = {
      ...pointKey({ ...point, timestamp_device: timestamp_device ?? '' }),
      device_id: point.device_id,
      tag: point.tag,
      fleet_id: point.fleet_id,
      timestamp_in: timestamp_in ?? '',
      payload: payload ?? '',
    };
    return item;
  });
  if (details.length) throw new ValidationError(`Invalid data points: ${details.map((d) => d.field).join(', ')}.`, { details });
  const oversize = items.flatMap((item, i) => (itemBytes(item) > ITEM_MAX_BYTES ? [{ field: `points[${i}].payload`, message: 'The point is larger than a DynamoDB item (400 KB).' }] : []));
  if (oversize.length) throw new PayloadTooLargeError('Data points too large to store.', { details: oversize });
  return items;
};

const keyOf = (item: { pk: string; sk: string }) => `${item.pk}\n${item.sk}`;

/** Groups items for TransactWriteItems: at most 100 items and 4 MB each. */
const transactionChunks = (items: PointItem[]): PointItem[][] => {
  const chunks: PointItem[][] = [];
  let chunk: PointItem[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = itemBytes(item);
    if (chunk.length === TRANSACTION_MAX_ITEMS || bytes + size > TRANSACTION_MAX_BYTES) {
      chunks.push(chunk);
      chunk = [];
      bytes = 0;
    }
    chunk.push(item);
    bytes += size;
  }
  if (chunk.length) chunks.push(chunk);
  return chunks;
};

/** Runs `fn` on every item, `concurrency` at a time. */
const eachConcurrently = async <T>(items: T[], concurrency: number, fn: (item: T) => Promise<void>) => {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, concurrency), items.length) }, worker));
};

/** Which of these points are stored already (an eventually consistent look: the conditional put decides). */
const findStoredKeys = async (db: Db, items: PointItem[]): Promise<Set<string>> => {
  const found = new Set<string>();
  for (let i = 0; i < items.length; i += BATCH_GET_MAX_KEYS) {
    let keys: Array<Record<string, unknown>> = items.slice(i, i + BATCH_GET_MAX_KEYS).map(({ pk, sk }) => ({ pk, sk }));
    for (let attempt = 0; keys.length; attempt++) {
      if (attempt >= MAX_ATTEMPTS) throw Object.assign(new Error('BatchGetItem kept returning unprocessed keys'), { name: 'ThrottlingException' });
      if (attempt > 0) await backoff(attempt);
      const result = await db.doc.send(
        new BatchGetCommand({ RequestItems: { [db.table]: { Keys: keys, ProjectionExpression: '#pk, #sk', ExpressionAttributeNames: { '#pk': 'pk', '#sk': 'sk' } } } }),
      );
      for (const item of result.Responses?.[db.table] ?? []) found.add(keyOf(item as PointItem));
      keys = result.UnprocessedKeys?.[db.table]?.Keys ?? [];
    }
  }
  return found;
};

/**
 * Stores one transaction's worth of points, each only if its key is free, and counts the ones
 * already stored. Points found stored are left out up front, so that the common retry (a whole
 * batch again) costs reads only; a point that appears in between cancels the transaction, which
 * then runs again without it.
 * @returns how many points were discarded as already stored.
 */
const writeChunk = async (db: Db, chunk: PointItem[]): Promise<number> => {
  const stored = await findStoredKeys(db, chunk);
  let fresh = chunk.filter((item) => !stored.has(keyOf(item)));
  let discarded = chunk.length - fresh.length;
  for (let attempt = 0; fresh.length; attempt++) {
    try {
      await db.doc.send(
        new TransactWriteCommand({
          TransactItems: fresh.map((Item) => ({ Put: { TableName: db.table, Item, ConditionExpression: 'attribute_not_exists(pk)' } })),
        }),
      );
      return discarded;
    } catch (error) {
      const reasons = (error as { name?: string; CancellationReasons?: Array<{ Code?: string }> }).CancellationReasons;
      if ((error as Error).name !== 'TransactionCanceledException' || !reasons || attempt + 1 >= MAX_ATTEMPTS) throw error;
      const taken = new Set(reasons.flatMap((reason, i) => (reason.Code === 'ConditionalCheckFailed' ? [i] : [])));
      if (taken.size) {
        discarded += taken.size;
        fresh = fresh.filter((_, i) => !taken.has(i));
        continue;
      }
      if (!reasons.every((reason) => !reason.Code || reason.Code === 'None' || TRANSIENT_REASONS.has(reason.Code))) throw error;
      await backoff(attempt);
    }
  }
  return discarded;
};

const itemNames = { '#sk': 'sk', '#device': 'device_id', '#tag': 'tag', '#fleet': 'fleet_id', '#in': 'timestamp_in', '#payload': 'payload' };

/** The Query of one partition: key range on sk, device and tag filters. */
const partitionQuery = (db: Db, pk: string, query: TimeseriesQuery): QueryCommandInput => {
  const names: Record<string, string> = { ...itemNames, '#pk': 'pk' };
  const values: Record<string, unknown> = { ':pk': pk };
  // sk starts with the timestamp and never equals a bare timestamp, so `sk < end` (and the
  // inclusive BETWEEN) excludes exactly the points at `end`, and `sk >= start` includes those at start.
  let range = '';
  if (query.start !== undefined && query.end !== undefined) {
    range = ' AND #sk BETWEEN :start AND :end';
    Object.assign(values, { ':start': query.start, ':end': query.end });
  } else if (query.start !== undefined) {
    range = ' AND #sk >= :start';
    values[':start'] = query.start;
  } else if (query.end !== undefined) {
    range = ' AND #sk < :end';
    values[':end'] = query.end;
  }
  const filters: string[] = [];
  const isOneOf = (name: string, prefix: string, list?: readonly string[]) => {
    if (!list?.length) return;
    list.forEach((value, i) => (values[`:${prefix}${i}`] = value));
    filters.push(`${name} IN (${list.map((_, i) => `:${prefix}${i}`).join(', ')})`);
  };
  isOneOf('#device', 'd', query.devices);
  isOneOf('#tag', 't', query.tags);
  return {
    TableName: db.table,
    KeyConditionExpression: `#pk = :pk${range}`,
    ...(filters.length ? { FilterExpression: filters.join(' AND ') } : {}),
    ProjectionExpression: Object.keys(itemNames).join(', '),
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
    ScanIndexForward: query.order === 'asc',
  };
};

/**
 * The pages of one partition, in key order. The next page is requested as soon as one arrives,
 * so that the network overlaps the caller's work; at most two pages are held.
 */
async function* partitionPages(db: Db, input: QueryCommandInput, firstLimit: number, need: number, filtered: boolean) {
  let fetched = 0;
  const fetch = (ExclusiveStartKey: Record<string, unknown> | undefined, Limit: number): Promise<QueryCommandOutput> => {
    const page = db.doc.send(new QueryCommand({ ...input, ExclusiveStartKey, Limit }));
    // Observed now so that a failure while the caller is busy is not an unhandled rejection; the
    // caller still sees it when it awaits the page.
    page.catch(() => undefined);
    return page;
  };
  let pending: Promise<QueryCommandOutput> | undefined = fetch(undefined, firstLimit);
  while (pending) {
    const page: QueryCommandOutput = await pending;
    fetched += page.Items?.length ?? 0;
    // Without filters every item counts, so a partition never needs more than `need` items.
    const left = filtered ? PAGE_MAX : Math.min(PAGE_MAX, need - fetched);
    pending = page.LastEvaluatedKey && left > 0 ? fetch(page.LastEvaluatedKey, left) : undefined;
    if (page.Items?.length) yield page.Items as PointItem[];
  }
}

interface Head {
  pages: AsyncGenerator<PointItem[]>;
  page: PointItem[];
  index: number;
}

/** Moves a head to its next item, fetching a page when needed; false when its partition is done. */
const ready = async (head: Head): Promise<boolean> => {
  while (head.index >= head.page.length) {
    const next = await head.pages.next();
    if (next.done) return false;
    head.page = next.value;
    head.index = 0;
  }
  return true;
};

/** Merges partitions read in the same order into one stream by sk (ascending or descending). */
async function* mergeBySortKey(sources: AsyncGenerator<PointItem[]>[], order: 'asc' | 'desc') {
  const heads: Head[] = sources.map((pages) => ({ pages, page: [], index: 0 }));
  try {
    let live = (await Promise.all(heads.map(async (head) => ((await ready(head)) ? head : undefined)))).filter((h): h is Head => !!h);
    while (live.length) {
      let best = live[0];
      for (let i = 1; i < live.length; i++) {
        const sk = live[i].page[live[i].index].sk;
        const bestSk = best.page[best.index].sk;
        if (order === 'asc' ? sk < bestSk : sk > bestSk) best = live[i];
      }
      yield best.page[best.index++];
      if (best.index >= best.page.length && !(await ready(best))) live = live.filter((head) => head !== best);
    }
  } finally {
    await Promise.all(heads.map((head) => head.pages.return(undefined)));
  }
}

const toPoint = (workspaceId: string, item: PointItem): DataPoint => ({
  workspace_id: workspaceId,
  fleet_id: item.fleet_id,
  device_id: item.device_id,
  tag: item.tag,
  timestamp_device: item.sk.slice(0, 24),
  timestamp_in: item.timestamp_in,
  payload: JSON.parse(item.payload),
});

export interface DynamoDbTimeseriesOptions {
  /** Transactions in flight at once per write. */
  writeConcurrency: number;
}

/**
 * The `dynamodb` time-series backend (keys and the reasons for them in `./keys.ts`).
 *
 * Writes: points are checked first (a bad one stores nothing), deduplicated within the call
 * (first wins), looked up with BatchGetItem, and the new ones put with TransactWriteItems of up
 * to 100 conditional puts. Each put is `attribute_not_exists(pk)`, so the first write of a key
 * wins even against a concurrent writer. Why transactions: a conditional put per request costs
 * one round trip per point; a transaction carries 100 of them, which measured 4–6× faster than
 * single PutItems (and faster than PartiQL BatchExecuteStatement) on DynamoDB Local, and saves
 * Lambda time on AWS, at twice the write units per point.
 *
 * Queries: the workspace's partitions (or its devices' shards) are read in parallel, in key
 * order, and merged by sk; `from*size` points are skipped while reading, and the iterator yields
 * as it goes, holding at most two pages per partition.
 */
export const dynamoDbTimeseriesStore = (db: Db, options: DynamoDbTimeseriesOptions): TimeseriesStore => ({
  async write(points: DataPoint[]): Promise<WriteResult> {
    const items = toItems(points);
    const unique = new Map<string, PointItem>();
    for (const item of items) if (!unique.has(keyOf(item))) unique.set(keyOf(item), item);
    let discarded = items.length - unique.size;
    await eachConcurrently(transactionChunks([...unique.values()]), options.writeConcurrency, async (chunk) => {
      const taken = await writeChunk(db, chunk);
      discarded += taken;
    });
    return { written: items.length - discarded, discarded };
  },

  async *query(query: TimeseriesQuery): AsyncGenerator<DataPoint> {
    const skip = query.from * query.size;
    const need = skip + query.size;
    if (query.size <= 0 || (query.start !== undefined && query.end !== undefined && query.start >= query.end)) return;
    const partitions = queryPartitions(query.workspaceId, query.devices);
    const filtered = !!(query.devices?.length || query.tags?.length);
    // A fair share of `need` per partition first, with slack for uneven shards; more pages follow on demand.
    const firstLimit = Math.min(PAGE_MAX, need, Math.max(25, Math.ceil((need * 1.25) / partitions.length)));
    const sources = partitions.map((pk) => partitionPages(db, partitionQuery(db, pk, query), firstLimit, need, filtered));
    let position = 0;
    for await (const item of mergeBySortKey(sources, query.order)) {
      if (position++ < skip) continue;
      yield toPoint(query.workspaceId, item);
      if (position >= need) return;
    }
  },
});

/** Creates the time-series table (on-demand, the keys of `./keys.ts`) unless it exists: local runtime and tests. */
export const ensureTimeseriesTable = async (client: DynamoDBClient, tableName: string) => {
  try {
    await client.send(new DescribeTableCommand({ TableName: tableName }));
    return;
  } catch (error) {
    if ((error as Error).name !== 'ResourceNotFoundException') throw error;
  }
  await client.send(
    new CreateTableCommand({
      TableName: tableName,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [
        { AttributeName: TIMESERIES_KEY.partition, AttributeType: 'S' },
        { AttributeName: TIMESERIES_KEY.sort, AttributeType: 'S' },
      ],
      KeySchema: [
        { AttributeName: TIMESERIES_KEY.partition, KeyType: 'HASH' },
        { AttributeName: TIMESERIES_KEY.sort, KeyType: 'RANGE' },
      ],
    }),
  );
};
