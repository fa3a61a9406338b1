import {
  BatchGetCommand,
  BatchWriteCommand,
  QueryCommand,
  type BatchGetCommandOutput,
  TransactWriteCommand,
  type QueryCommandInput,
  type QueryCommandOutput,
} from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import type { ItemKey } from './keys';

/** Drops the table's own attributes from an item, leaving the resource's fields. */
export const strip = <T>(item: Record<string, unknown>): T => {
  const { pk: _pk, sk: _sk, ...rest } = item;
  return rest as T;
};

/** Where to read a collection (pk, sk prefix) from, and how. */
export interface CollectionRead {
  pk: string;
  prefix: string;
  /** Start after this sort key (a list's cursor); it must begin with `prefix`. */
  after?: string;
  /** Query's Limit: items evaluated per page (default: DynamoDB's 1 MB pages). */
  pageSize?: number;
  /**
   * A filtered read (a search) sizes its own reads: given the items of the page just read and how
   * many items DynamoDB evaluated for it, the Limit of the next Query; `undefined` for DynamoDB's
   * own 1 MB pages, 0 to read nothing ahead (the next page is then read only when asked for).
   */
  grow?: (items: Array<Record<string, unknown>>, evaluated: number) => number | undefined;
  /**
   * Asks for the prefix as a key range (`sk BETWEEN prefix AND …`, the same items) rather than
   * `begins_with`: DynamoDB Local answers `begins_with` by reading the partition from its first
   * item up to the prefix (a Query of 1,000 tag index entries at the end of a partition of 400,000
   * items: ~10× the range's time), a range from where it starts. AWS answers both alike.
   */
  keyRange?: boolean;
  extra?: Partial<QueryCommandInput>;
}

/** The first string after every string that begins with `prefix` (its last character's successor). */
const endOfPrefix = (prefix: string) => `${prefix.slice(0, -1)}${String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1)}`;

const ignore = () => undefined;

// Past this many items a growing read asks for DynamoDB's own 1 MB pages.
const GROWN_PAGE_MAX = 4000;

/**
 * The pages of a collection in sort-key order, raw items (with `pk` and `sk`), following
 * LastEvaluatedKey to the end. The next page is asked for while the caller handles this one, so
 * that reading and sending overlap; memory holds two pages whatever the collection's size.
 * Strongly consistent: a list right after a write sees it.
 */
export async function* queryPages(
  db: Db,
  { pk, prefix, after, pageSize, grow, keyRange, extra = {} }: CollectionRead,
): AsyncGenerator<Array<Record<string, unknown>>> {
  let limit = pageSize;
  // A prefix ending in U+FFFF has no successor character: read as begins_with.
  const range = keyRange && prefix.length > 0 && prefix.charCodeAt(prefix.length - 1) < 0xffff;
  const read = (ExclusiveStartKey: Record<string, unknown> | undefined): Promise<QueryCommandOutput> => {
    const page = db.doc.send(
      new QueryCommand({
        ConsistentRead: true,
        ...extra,
        TableName: db.table,
        KeyConditionExpression: range ? 'pk = :pk AND sk BETWEEN :prefix AND :end' : 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ...extra.ExpressionAttributeValues, ':pk': pk, ':prefix': prefix, ...(range ? { ':end': endOfPrefix(prefix) } : {}) },
        ...(limit ? { Limit: limit } : {}),
        ExclusiveStartKey,
      }),
    );
    // A reader that stops early leaves the read ahead unawaited: its failure is nobody's.
    page.catch(ignore);
    return page;
  };
  let next: Promise<QueryCommandOutput> | undefined = read(after === undefined ? undefined : { pk, sk: after });
  while (next) {
    const page: QueryCommandOutput = await next;
    // BETWEEN includes its end, the one key past the prefix's range.
    const items = range ? (page.Items ?? []).filter((item) => (item.sk as string).startsWith(prefix)) : (page.Items ?? []);
    if (grow && limit !== undefined) {
      const size = grow(items, page.ScannedCount ?? items.length);
      limit = size === undefined || size > GROWN_PAGE_MAX ? undefined : size;
    }
    const resume = limit === 0 ? page.LastEvaluatedKey : undefined;
    next = page.LastEvaluatedKey && !resume ? read(page.LastEvaluatedKey) : undefined;
    yield items;
    if (resume) {
      // the reader wants more than it expected: read on, a page at a time
      limit = pageSize;
      next = read(resume);
    }
  }
}

/** Where a list's read starts (after a cursor's sort key) and how many items each Query evaluates. */
export type ListRead = Pick<CollectionRead, 'after' | 'pageSize' | 'grow'>;

/** An item of a collection with its sort key: where a page that ends at it resumes. */
export interface Keyed<T> {
  sk: string;
  value: T;
}

/** The pages of a collection (see {@link queryPages}), each item read by `read` and kept with its sort key. */
export async function* keyedPages<T>(
  db: Db,
  collectionRead: CollectionRead,
  read: (item: Record<string, unknown>) => T = strip<T>,
): AsyncGenerator<Array<Keyed<T>>> {
  for await (const page of queryPages(db, collectionRead)) yield page.map((item) => ({ sk: item.sk as string, value: read(item) }));
}

/** The items of a collection one by one, in sort-key order, read page by page (see {@link queryPages}). */
export async function* keyedItems<T>(db: Db, collectionRead: CollectionRead, read: (item: Record<string, unknown>) => T = strip<T>): AsyncGenerator<Keyed<T>> {
  for await (const page of keyedPages(db, collectionRead, read)) yield* page;
}

/**
 * Every item of a collection, following LastEvaluatedKey to the end (for collections that stay
 * small; a list that can grow streams {@link queryPages} instead). Strongly consistent.
 */
export const queryAll = async <T>(db: Db, pk: string, prefix: string, extra: Partial<QueryCommandInput> = {}): Promise<T[]> => {
  const items: T[] = [];
  for await (const page of queryPages(db, { pk, prefix, extra })) for (const item of page) items.push(strip<T>(item));
  return items;
};

const BATCH_WRITE_LIMIT = 25; // BatchWriteItem takes at most 25 requests
const MAX_ATTEMPTS = 8;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Writes one chunk of ≤ 25 puts, retrying UnprocessedItems with exponential backoff and jitter. */
const writeChunk = async (db: Db, items: Array<ItemKey & Record<string, unknown>>) => {
  let requests = items.map((Item) => ({ PutRequest: { Item } }));
  for (let attempt = 0; requests.length; attempt++) {
    if (attempt >= MAX_ATTEMPTS) throw Object.assign(new Error('BatchWriteItem kept returning unprocessed items'), { name: 'ThrottlingException' });
    if (attempt > 0) await pause(Math.random() * Math.min(1000, 25 * 2 ** attempt));
    const result = await db.doc.send(new BatchWriteCommand({ RequestItems: { [db.table]: requests } }));
    requests = (result.UnprocessedItems?.[db.table] ?? []) as typeof requests;
  }
};

/** A transaction's action besides its puts (TransactWriteItems' Update, Put, ConditionCheck, Delete). */
export type TransactAction = Record<string, unknown>;

export const TRANSACT_LIMIT = 100; // TransactWriteItems takes at most 100 actions
const TRANSACT_RETRYABLE = new Set(['ThrottlingError', 'ProvisionedThroughputExceeded', 'TransactionConflict']);

/** A condition on one put of a transaction: its expression and values (`#`/`:` names of its own). */
export interface PutCondition {
  ConditionExpression: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Record<string, unknown>;
}

/**
 * A chunk writer for `putPipelined` that puts each chunk of ≤ 99 items in one transaction with one
 * more action made of the chunk and its writer's slot (say, a counter of what the chunk holds), so
 * that the items and the action are stored together or not at all. With `condition`, each put is
 * made only where its item's condition holds, and an item whose condition fails is one already as
 * wanted: it is left as it is, the rest written again with their action (so the action counts what
 * this write stored), and every item of the chunk is answered as in place. Throttled or
 * conflicting transactions are retried with backoff and jitter; the SDK repeats a transaction's
 * client token on its own retries, which makes them idempotent.
 * https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html
 */
export const transactChunks = <T extends ItemKey & Record<string, unknown>>(
  db: Db,
  action: (items: T[], slot: number) => TransactAction,
  condition?: (item: T) => PutCondition | undefined,
): ChunkWriter<T> => ({
  size: TRANSACT_LIMIT - 1,
  write: async (chunk, slot) => {
    let items = chunk;
    for (let attempt = 0; items.length; ) {
      if (attempt > 0) await pause(Math.random() * Math.min(1000, 25 * 2 ** attempt));
      try {
        const puts = items.map((Item) => ({ Put: { TableName: db.table, Item, ...condition?.(Item) } }));
        await db.doc.send(new TransactWriteCommand({ TransactItems: [...puts, action(items, slot)] }));
        return chunk;
      } catch (error) {
        const reasons = (error as { CancellationReasons?: Array<{ Code?: string }> }).CancellationReasons ?? [];
        const refused = new Set(reasons.flatMap((r, i) => (i < items.length && r.Code === 'ConditionalCheckFailed' ? [i] : [])));
        if (condition && refused.size) {
          items = items.filter((_, i) => !refused.has(i));
          continue;
        }
        attempt++;
        if (attempt >= MAX_ATTEMPTS || !reasons.some((r) => TRANSACT_RETRYABLE.has(r.Code ?? ''))) throw error;
      }
    }
    return chunk;
  },
});

/**
 * How `putPipelined` writes: chunks of at most `size` items, each by one call of `write` (its slot:
 * which of the calls in flight), which answers the items in place when that is not all of them.
 */
export interface ChunkWriter<T> {
  size: number;
  write: (items: T[], slot: number) => Promise<T[] | void>;
}

/** BatchWriteItem, ≤ 25 items a call, unprocessed ones retried with backoff (the default writer). */
const batchChunks = (db: Db): ChunkWriter<ItemKey & Record<string, unknown>> => ({ size: BATCH_WRITE_LIMIT, write: (items) => writeChunk(db, items) });

/**
 * Puts the items of a stream of pages, `concurrency` chunks in flight (BatchWriteItem calls of ≤ 25
 * items, unprocessed ones retried with backoff, or the chunks of another `writer`), and yields each
 * chunk's items once all of them are stored, in the order the chunks end. The next page is read
 * while the writes of the last one run, so reading and writing overlap. Each item given is yielded
 * exactly once (unless its writer left it out), or the generator throws (and yields nothing more) when a chunk keeps failing; what
 * was yielded is stored.
 */
export async function* putPipelined<T extends ItemKey & Record<string, unknown>>(
  db: Db,
  pages: AsyncIterable<T[]>,
  concurrency: number,
  writer: ChunkWriter<T> = batchChunks(db) as ChunkWriter<T>,
): AsyncGenerator<T[]> {
  const source = pages[Symbol.asyncIterator]();
  // A read that fails after a write failed is not waited for; it must not go unhandled either.
  const read = () => {
    const page = source.next();
    page.catch(() => undefined);
    return page;
  };
  let nextPage: Promise<IteratorResult<T[]>> | undefined = read();
  const waiting: T[][] = [];
  const running = new Map<number, Promise<{ id: number; items: T[]; error?: unknown }>>();
  // Each chunk in flight holds a slot of its own, 0 … concurrency − 1 (a transaction's counter shard).
  const free = Array.from({ length: concurrency }, (_, slot) => concurrency - 1 - slot);
  let ids = 0;
  const start = (items: T[]) => {
    const id = ids++;
    const slot = free.pop()!;
    running.set(
      id,
      writer
        .write(items, slot)
        .then(
          (stored) => ({ id, items: stored ?? items }),
          (error: unknown) => ({ id, items, error }),
        )
        .finally(() => free.push(slot)),
    );
  };
  try {
    while (nextPage || waiting.length || running.size) {
      while (running.size < concurrency && waiting.length) start(waiting.shift()!);
      if (nextPage && waiting.length < concurrency) {
        // Wait for the next page or for a write, whichever comes first.
        const settled = await Promise.race([nextPage.then((page) => ({ page })), ...running.values()]);
        if ('page' in settled) {
          if (settled.page.done) nextPage = undefined;
          else {
            for (let i = 0; i < settled.page.value.length; i += writer.size) waiting.push(settled.page.value.slice(i, i + writer.size));
            nextPage = read();
          }
          continue;
        }
        running.delete(settled.id);
        if (settled.error) throw settled.error;
        yield settled.items;
        continue;
      }
      if (!running.size) continue;
      const settled = await Promise.race(running.values());
      running.delete(settled.id);
      if (settled.error) throw settled.error;
      yield settled.items;
    }
  } finally {
    // A failed write or read ends the call only once the writes already sent have settled: nothing
    // of it runs on after it has answered (their outcomes never reject).
    await Promise.all(running.values());
    await source.return?.();
  }
}

/**
 * Puts many items (overwriting same-key ones) with BatchWriteItem, `concurrency` calls in flight.
 * Not atomic; callers make the writes idempotent so that a retry converges.
 */
export const putAll = async (db: Db, items: Array<ItemKey & Record<string, unknown>>, concurrency: number) => {
  const chunks: Array<typeof items> = [];
  for (let i = 0; i < items.length; i += BATCH_WRITE_LIMIT) chunks.push(items.slice(i, i + BATCH_WRITE_LIMIT));
  let next = 0;
  const worker = async () => {
    while (next < chunks.length) await writeChunk(db, chunks[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, chunks.length) }, worker));
};

/** A transaction item that creates an item, failing if its key is taken. */
export const putNew = (db: Db, key: ItemKey, fields: object) => ({
  Put: { TableName: db.table, Item: { ...key, ...fields }, ConditionExpression: 'attribute_not_exists(pk)' },
});

/** A transaction item that only checks an item exists. */
export const checkExists = (db: Db, key: ItemKey) => ({
  ConditionCheck: { TableName: db.table, Key: key, ConditionExpression: 'attribute_exists(pk)' },
});

// BatchGetItem takes at most 100 keys a call, and may leave some for another.
// https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchGetItem.html
const BATCH_GET_LIMIT = 100;

/**
 * The items of `keys` that exist (their `projection`, names given as `#name` in `names`), read
 * eventually consistently 100 keys a call; unprocessed keys are asked again after a short backoff.
 */
export const getMany = async (db: Db, keys: ItemKey[], projection: string, names?: Record<string, string>): Promise<Array<Record<string, unknown>>> => {
  const items: Array<Record<string, unknown>> = [];
  for (let i = 0; i < keys.length; i += BATCH_GET_LIMIT) {
    let Keys: Array<Record<string, unknown>> | undefined = keys.slice(i, i + BATCH_GET_LIMIT).map(({ pk, sk }) => ({ pk, sk }));
    for (let attempt = 0; Keys?.length; attempt++) {
      if (attempt) await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 25 * 2 ** attempt)));
      const answer: BatchGetCommandOutput = await db.doc.send(
        new BatchGetCommand({
          RequestItems: { [db.table]: { Keys, ProjectionExpression: projection, ...(names ? { ExpressionAttributeNames: names } : {}) } },
        }),
      );
      items.push(...(answer.Responses?.[db.table] ?? []));
      Keys = answer.UnprocessedKeys?.[db.table]?.Keys;
    }
  }
  return items;
};
