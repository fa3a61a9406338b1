import { QueryCommand, type QueryCommandInput, type QueryCommandOutput } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../../shared/clients';
import { PayloadTooLargeError, ValidationError, type ErrorDetail } from '../../shared/errors';
import { putAll } from '../items';
import type { DataPoint, PointToStore, TimeseriesQuery, TimeseriesStore, WriteResult } from './index';
import { KEY_PART, KEY_TIMESTAMP, pointKey, queryPartitions, seriesKeyOf } from './keys';

/**
 * One arrival of a data point as stored (keys in `./keys.ts`). `timestamp_device` is the first 24
 * characters of `sk`; the payload is kept as JSON text, exactly as received.
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
/** Items per Query page once a shard is known to hold more: ~250 KB of typical points. */
const PAGE_MAX = 1000;
/** Items of a partition's first page: small, so that a large answer starts quickly. */
const FIRST_PAGE_MAX = 100;
/** Fewest items a page asks for once a partition has nearly enough: a run of a key's arrivals is read in few calls. */
const TAIL_PAGE_MIN = 25;
/** Series keys a store remembers as stored, with their earliest version: ~200 bytes each, so ~20 MB at most. */
const KNOWN_KEYS_MAX = 100_000;
/** Largest `sequence` the version's four digits hold. */
const SEQUENCE_MAX = 9999;

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
const toItems = (points: PointToStore[]): PointItem[] => {
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
    const sequence = point.sequence ?? 0;
    if (!Number.isInteger(sequence) || sequence < 0 || sequence > SEQUENCE_MAX) bad(i, 'sequence', `Must be an integer from 0 to ${SEQUENCE_MAX}.`);
    const item: PointItem = {
      ...pointKey({ ...point, timestamp_device: timestamp_device ?? '', timestamp_in: timestamp_in ?? '', sequence, payloadJson: payload ?? '' }),
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

/** The dedup key of an item within the table: its partition and series key. */
const dedupKeyOf = (item: { pk: string; sk: string }) => `${item.pk}\n${seriesKeyOf(item.sk)}`;

/**
 * Series keys known to be stored, each with the earliest version this store wrote, the oldest
 * forgotten first. Points are never changed or deleted, so a point whose key is known with an
 * earlier (or the same) version is a duplicate, known without a request: a batch retried on the
 * same container (after a failed forward, say) writes nothing, and a device's re-sent points are
 * dropped here.
 */
class KnownKeys {
  private readonly versions = new Map<string, string>();

  constructor(private readonly max: number) {}

  /** Whether `key` is known with a version that sorts before or equals `sk`'s. */
  supersedes(key: string, sk: string) {
    const known = this.versions.get(key);
    return known !== undefined && known <= sk;
  }

  add(key: string, sk: string) {
    if (this.supersedes(key, sk)) return;
    this.versions.delete(key);
    this.versions.set(key, sk);
    if (this.versions.size > this.max) this.versions.delete(this.versions.keys().next().value as string);
  }
}

/**
 * The arrivals of a write worth storing: per series key the one readers would keep (the smallest
 * version), unless this store already stored that key with an earlier or the same version. The
 * rule is the readers' own, so how messages are batched never changes what a read returns.
 */
const earliestArrivals = (items: PointItem[], known: KnownKeys): Map<string, PointItem> => {
  const earliest = new Map<string, PointItem>();
  for (const item of items) {
    const key = dedupKeyOf(item);
    const held = earliest.get(key);
    if (!held || item.sk < held.sk) earliest.set(key, item);
  }
  for (const [key, item] of earliest) if (known.supersedes(key, item.sk)) earliest.delete(key);
  return earliest;
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
 * The points of one partition, in key order, a page at a time: of each series key only its
 * earliest version. The versions of a key are adjacent: ascending, the first of the run is kept;
 * descending, the last, so the run's latest item is held back until the run ends.
 *
 * The next page is requested as soon as one arrives, so that the network overlaps the caller's
 * work; at most two pages are held. Pages start small, so that the first record comes quickly, and
 * double up to PAGE_MAX.
 */
async function* partitionPages(db: Db, input: QueryCommandInput, firstLimit: number, need: number, filtered: boolean) {
  const descending = input.ScanIndexForward === false;
  let keys = 0;
  let enough = false;
  let held: PointItem | undefined;
  let heldKey = '';
  let limit = firstLimit;
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
    const points: PointItem[] = [];
    for (const item of (page.Items ?? []) as PointItem[]) {
      const key = seriesKeyOf(item.sk);
      if (held && key === heldKey) {
        if (descending) held = item;
        continue;
      }
      if (held) points.push(held);
      held = item;
      heldKey = key;
      keys++;
    }
    // Without filters every series key counts, so a partition never needs more than `need` keys:
    // it reads on until a key past them starts, which ends the last needed key's run.
    enough = !filtered && keys > need;
    limit = Math.min(PAGE_MAX, limit * 2, filtered ? PAGE_MAX : Math.max(need + 1 - keys, TAIL_PAGE_MIN));
    pending = page.LastEvaluatedKey && !enough ? fetch(page.LastEvaluatedKey, limit) : undefined;
    if (points.length) yield points;
  }
  // When reading stopped early, the held key is past `need` and its run maybe unfinished: never needed.
  if (held && !enough) yield [held];
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
  /** BatchWriteItem calls in flight at once per write. */
  writeConcurrency: number;
}

/**
 * The `dynamodb` time-series backend (keys and the reasons for them in `./keys.ts`).
 *
 * Writes: points are checked first (a bad one stores nothing); per series key only the earliest
 * version of the call is kept (timestamp_in, then sequence), and dropped too when this store
 * already wrote that key with an earlier or the same version; the rest are put with BatchWriteItem, unconditionally, each arrival
 * under its own version. Readers keep the earliest version of each key, so the first arrival wins
 * against a concurrent writer and whatever order the writes land in, and a retried write rewrites
 * the same items (nothing lost, nothing doubled). A later arrival that another container stores
 * stays in the table, skipped by every read.
 *
 * Why not a conditional put per point (DESIGN §5's first plan): on DynamoDB Local every write path
 * that checks a condition (conditional PutItem, TransactWriteItems, PartiQL INSERT) runs in its one
 * database thread at about a third of BatchWriteItem's rate, below the ingest target of half; on
 * AWS a transactional put costs two write units, a put in a batch one.
 *
 * Queries: the workspace's partitions (or its devices' shards) are read in parallel, in key
 * order, and merged by sk; `from*size` points are skipped while reading, and the iterator yields
 * as it goes, holding at most two pages per partition.
 */
export const dynamoDbTimeseriesStore = (db: Db, options: DynamoDbTimeseriesOptions): TimeseriesStore => {
  const known = new KnownKeys(KNOWN_KEYS_MAX);
  return {
    async write(points: PointToStore[]): Promise<WriteResult> {
      const items = toItems(points);
      const fresh = earliestArrivals(items, known);
      await putAll(db, [...fresh.values()], options.writeConcurrency);
      for (const [key, item] of fresh) known.add(key, item.sk);
      return { written: fresh.size, discarded: items.length - fresh.size };
    },

    async *query(query: TimeseriesQuery): AsyncGenerator<DataPoint> {
      const skip = query.from * query.size;
      const need = skip + query.size;
      if (query.size <= 0 || (query.start !== undefined && query.end !== undefined && query.start >= query.end)) return;
      const partitions = queryPartitions(query.workspaceId, query.devices);
      const filtered = !!(query.devices?.length || query.tags?.length);
      // A fair share of `need` per partition first, with slack for uneven shards; more pages follow on demand.
      const firstLimit = Math.min(FIRST_PAGE_MAX, need, Math.max(25, Math.ceil((need * 1.25) / partitions.length)));
      const sources = partitions.map((pk) => partitionPages(db, partitionQuery(db, pk, query), firstLimit, need, filtered));
      let position = 0;
      for await (const item of mergeBySortKey(sources, query.order)) {
        if (position++ < skip) continue;
        yield toPoint(query.workspaceId, item);
        if (position >= need) return;
      }
    },
  };
};
