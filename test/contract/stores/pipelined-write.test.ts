import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { InitializeMiddleware } from '@smithy/types';
import { documentClient, type Db } from '../../../lambdas/shared/clients';
import { putPipelined } from '../../../lambdas/stores/items';
import { freshTable } from '../../helpers/db';

type Item = { pk: string; sk: string; n: number };
type Put = { PutRequest: { Item: Item } };

/**
 * A DynamoDB Local client whose BatchWriteItem calls leave out the items `defer` picks: they are not
 * sent, and come back as UnprocessedItems, as a throttled table answers. Every item actually sent
 * is counted by key.
 */
const throttledDb = (table: string, defer: (item: Item, attempt: number) => boolean) => {
  const client = new DynamoDBClient({});
  const sent = new Map<string, number>();
  const offered = new Map<string, number>();
  let calls = 0;
  const middleware: InitializeMiddleware<any, any> = (next, context) => async (args) => {
    if (context.commandName !== 'BatchWriteItemCommand') return next(args);
    calls += 1;
    const requests = args.input.RequestItems[table] as Put[];
    const deferred: Put[] = [];
    const kept: Put[] = [];
    for (const request of requests) {
      const key = request.PutRequest.Item.sk;
      const attempt = offered.get(key) ?? 0;
      offered.set(key, attempt + 1);
      (defer(request.PutRequest.Item, attempt) ? deferred : kept).push(request);
    }
    for (const request of kept) sent.set(request.PutRequest.Item.sk, (sent.get(request.PutRequest.Item.sk) ?? 0) + 1);
    const result = kept.length
      ? await next({ ...args, input: { ...args.input, RequestItems: { [table]: kept } } })
      : { output: { $metadata: {}, UnprocessedItems: {} }, response: {} };
    const unprocessed = [...((result.output.UnprocessedItems?.[table] as Put[] | undefined) ?? []), ...deferred];
    return { ...result, output: { ...result.output, UnprocessedItems: unprocessed.length ? { [table]: unprocessed } : {} } };
  };
  client.middlewareStack.add(middleware, { step: 'initialize', name: 'throttleSome' });
  const db: Db = { doc: documentClient(client), table };
  return { db, sent, offered, calls: () => calls };
};

/** `count` items in pages of `pageSize`, read one page at a time as a Query would give them. */
async function* pagesOf(count: number, pageSize: number): AsyncGenerator<Item[]> {
  for (let start = 0; start < count; start += pageSize) {
    await Promise.resolve();
    yield Array.from({ length: Math.min(pageSize, count - start) }, (_, i) => ({
      pk: 'P#pipelined',
      sk: `I#${String(start + i).padStart(6, '0')}`,
      n: start + i,
    }));
  }
}

const storedKeys = async (db: Db) => {
  const keys: string[] = [];
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page = await db.doc.send(
      new QueryCommand({ TableName: db.table, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': 'P#pipelined' }, ExclusiveStartKey }),
    );
    keys.push(...(page.Items ?? []).map((item) => item.sk as string));
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return keys.sort();
};

const drain = async (written: AsyncIterable<Item[]>, into: string[]) => {
  for await (const items of written) into.push(...items.map((item) => item.sk));
};

describe('putPipelined on DynamoDB Local with a throttled BatchWriteItem', () => {
  it('stores and yields every item once, retrying only the unprocessed ones', async () => {
    const { table } = await freshTable();
    // A third of the items are left unprocessed twice, a few more once.
    const { db, sent, offered, calls } = throttledDb(table, (item, attempt) => (item.n % 3 === 0 && attempt < 2) || (item.n % 7 === 0 && attempt < 1));
    const yielded: string[] = [];

    await drain(putPipelined(db, pagesOf(2000, 300), 8), yielded);

    const all = Array.from({ length: 2000 }, (_, i) => `I#${String(i).padStart(6, '0')}`);
    expect(yielded.slice().sort()).toEqual(all);
    expect(await storedKeys(db)).toEqual(all);
    // Each item reached the table exactly once: a processed item is never sent again.
    expect([...sent.values()].every((times) => times === 1)).toBe(true);
    expect(sent.size).toBe(2000);
    expect(offered.get('I#000000')).toBe(3);
    expect(offered.get('I#000007')).toBe(2);
    expect(offered.get('I#000001')).toBe(1);
    // At most 25 items a call: 80 first calls, and the retries of the deferred items.
    expect(calls()).toBeGreaterThan(80);
  });

  it('throws when an item stays unprocessed, having yielded only what is stored', async () => {
    const { table } = await freshTable();
    const { db, sent } = throttledDb(table, (item) => item.n === 137);
    const yielded: string[] = [];

    await expect(drain(putPipelined(db, pagesOf(400, 100), 4), yielded)).rejects.toThrow('BatchWriteItem kept returning unprocessed items');

    expect(yielded).not.toContain('I#000137');
    const stored = await storedKeys(db);
    expect(yielded.every((key) => stored.includes(key))).toBe(true);
    expect(sent.has('I#000137')).toBe(false);
  });

  it('passes a failed page read on, after the writes already started', async () => {
    const { table } = await freshTable();
    const { db } = throttledDb(table, () => false);
    async function* failing(): AsyncGenerator<Item[]> {
      yield* pagesOf(50, 50);
      throw new Error('Query failed');
    }
    const yielded: string[] = [];

    await expect(drain(putPipelined(db, failing(), 4), yielded)).rejects.toThrow('Query failed');
  });
});
