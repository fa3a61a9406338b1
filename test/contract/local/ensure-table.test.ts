import { CreateTableCommand, DescribeTableCommand, DescribeTimeToLiveCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { randomUUID } from 'node:crypto';
import { documentClient, type Db } from '../../../lambdas/shared/clients';
import { REGISTRY_SWEEP_INDEX, sweepEntry } from '../../../lambdas/stores/keys';
import { listDueEntries } from '../../../lambdas/stores/sweep-store';
import { TIMESERIES_TTL_ATTRIBUTE } from '../../../lambdas/stores/timeseries/keys';
import { ensureTable } from '../../../local/dynamodb-local';
import { until } from '../../../local/ports';

const client = new DynamoDBClient({});
const describe_ = async (table: string) => (await client.send(new DescribeTableCommand({ TableName: table }))).Table!;

/** A registry table as npm start made it before the sweep index existed (a data folder from then). */
const oldRegistry = async (table: string) => {
  await client.send(
    new CreateTableCommand({
      TableName: table,
      BillingMode: 'PAY_PER_REQUEST',
      StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' },
      AttributeDefinitions: [
        { AttributeName: 'pk', AttributeType: 'S' },
        { AttributeName: 'sk', AttributeType: 'S' },
      ],
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
    }),
  );
  return { doc: documentClient(client), table } satisfies Db;
};

const due = async (db: Db, before: number, pageSize?: number) => {
  const entries = [];
  for await (const page of listDueEntries(db, { before, partition: 'DUE#0', pageSize })) entries.push(...page);
  return entries;
};

const T0 = Date.UTC(2026, 0, 1);

describe('ensureTable with the registry’s sweep index (npm start’s table)', () => {
  it('creates a new table with the index, keys only, ACTIVE', async () => {
    const table = `registry-${randomUUID()}`;

    await ensureTable(client, table, { stream: true, indexes: [REGISTRY_SWEEP_INDEX] });

    const index = (await describe_(table)).GlobalSecondaryIndexes?.find((g) => g.IndexName === REGISTRY_SWEEP_INDEX.name);
    expect(index).toMatchObject({
      IndexStatus: 'ACTIVE',
      KeySchema: [
        { AttributeName: 'sweep_pk', KeyType: 'HASH' },
        { AttributeName: 'sweep_sk', KeyType: 'RANGE' },
      ],
      Projection: { ProjectionType: 'KEYS_ONLY' },
    });
  });

  it('adds the index to a table of an older data folder, keeping its items and its stream, and the old items with both attributes are in it', async () => {
    const table = `registry-${randomUUID()}`;
    const db = await oldRegistry(table);
    await db.doc.send(new PutCommand({ TableName: table, Item: { pk: 'DEV#dev-1', sk: 'JOB#reboot', status: 'pending', ...sweepEntry(T0 + 1000, 'DUE#0') } }));
    await db.doc.send(new PutCommand({ TableName: table, Item: { pk: 'WKS#wks-1', sk: 'DEV#dev-1', name: 'kept' } }));

    await ensureTable(client, table, { stream: true, indexes: [REGISTRY_SWEEP_INDEX] });

    const after = await describe_(table);
    expect(after.GlobalSecondaryIndexes?.map((g) => [g.IndexName, g.IndexStatus])).toEqual([['sweep', 'ACTIVE']]);
    expect(after.StreamSpecification).toEqual({ StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' });
    expect((await db.doc.send(new GetCommand({ TableName: table, Key: { pk: 'WKS#wks-1', sk: 'DEV#dev-1' } }))).Item?.name).toBe('kept');
    expect(await due(db, T0 + 60_000)).toEqual([{ pk: 'DEV#dev-1', sk: 'JOB#reboot', due: new Date(T0 + 1000).toISOString() }]);
  });

  it('leaves a table that has the index as it is (a restart)', async () => {
    const table = `registry-${randomUUID()}`;
    await ensureTable(client, table, { stream: true, indexes: [REGISTRY_SWEEP_INDEX] });
    const before = await describe_(table);

    await ensureTable(client, table, { stream: true, indexes: [REGISTRY_SWEEP_INDEX] });

    expect((await describe_(table)).GlobalSecondaryIndexes).toEqual(before.GlobalSecondaryIndexes);
  });

  it('refuses a table whose index of that name has other keys, saying what to do', async () => {
    const table = `registry-${randomUUID()}`;
    await ensureTable(client, table, { indexes: [{ ...REGISTRY_SWEEP_INDEX, sortKey: 'due_at' }] });

    await expect(ensureTable(client, table, { indexes: [REGISTRY_SWEEP_INDEX] })).rejects.toThrow(
      /has an index sweep on .*due_at.*cannot change its keys; start with another data folder/,
    );
  });
});

describe('the sweep index', () => {
  let db: Db;
  beforeAll(async () => {
    const table = `registry-${randomUUID()}`;
    await ensureTable(client, table, { stream: true, indexes: [REGISTRY_SWEEP_INDEX] });
    db = { doc: documentClient(client), table };
    const put = (Item: Record<string, unknown>) => db.doc.send(new PutCommand({ TableName: table, Item }));
    await Promise.all([
      put({ pk: 'DEV#a', sk: 'JOB#x', ...sweepEntry(T0 + 3000, 'DUE#0') }),
      put({ pk: 'DEV#b', sk: 'JOB#x', ...sweepEntry(T0 + 1000, 'DUE#0') }),
      put({ pk: 'DEV#c', sk: 'JOB#x', ...sweepEntry(T0 + 2000, 'DUE#0', '#DEV#c') }),
      put({ pk: 'DEV#d', sk: 'JOB#x', ...sweepEntry(T0 + 120_000, 'DUE#0') }), // not due yet
      put({ pk: 'DEV#e', sk: 'JOB#x', ...sweepEntry(T0 + 1000, 'DUE#1') }), // another partition
      // Sparse: an item with one of the two attributes, or none, is not in the index.
      put({ pk: 'DEV#f', sk: 'JOB#x', sweep_pk: 'DUE#0' }),
      put({ pk: 'DEV#g', sk: 'JOB#x', sweep_sk: new Date(T0).toISOString() }),
      put({ pk: 'DEV#h', sk: 'JOB#x' }),
    ]);
  });

  it('holds only items with both attributes, and lists those due before a time, earliest first', async () => {
    expect((await due(db, T0 + 60_000)).map((e) => e.pk)).toEqual(['DEV#b', 'DEV#c', 'DEV#a']);
  });

  it('reads every page, passing each page’s cursor back', async () => {
    const pages: string[][] = [];
    for await (const page of listDueEntries(db, { before: T0 + 60_000, partition: 'DUE#0', pageSize: 1 })) pages.push(page.map((e) => e.pk));

    expect(pages.flat()).toEqual(['DEV#b', 'DEV#c', 'DEV#a']);
    expect(pages.filter((p) => p.length).length).toBe(3);
  });

  it('keeps partitions apart', async () => {
    const entries = [];
    for await (const page of listDueEntries(db, { before: T0 + 60_000, partition: 'DUE#1' })) entries.push(...page);

    expect(entries.map((e) => e.pk)).toEqual(['DEV#e']);
  });
});

describe('ensureTable with the time-series table’s TTL (npm start’s table)', () => {
  it('turns TTL on, and DynamoDB Local deletes the items whose expiry has passed, as DynamoDB does within days', async () => {
    const table = `timeseries-${randomUUID()}`;
    await ensureTable(client, table, { ttl: TIMESERIES_TTL_ATTRIBUTE });
    const db: Db = { doc: documentClient(client), table };
    const now = Math.floor(Date.now() / 1000);
    await db.doc.send(new PutCommand({ TableName: table, Item: { pk: 'TS#past', sk: 'a', [TIMESERIES_TTL_ATTRIBUTE]: now - 86_400 } }));
    await db.doc.send(new PutCommand({ TableName: table, Item: { pk: 'TS#later', sk: 'a', [TIMESERIES_TTL_ATTRIBUTE]: now + 86_400 } }));
    await db.doc.send(new PutCommand({ TableName: table, Item: { pk: 'TS#forever', sk: 'a' } }));
    const read = async (pk: string) => (await db.doc.send(new GetCommand({ TableName: table, Key: { pk, sk: 'a' }, ConsistentRead: true }))).Item;

    expect((await client.send(new DescribeTimeToLiveCommand({ TableName: table }))).TimeToLiveDescription).toEqual({
      TimeToLiveStatus: 'ENABLED',
      AttributeName: TIMESERIES_TTL_ATTRIBUTE,
    });
    await until(async () => (await read('TS#past')) === undefined, 'DynamoDB Local’s TTL to delete the expired item', 60_000);
    expect(await read('TS#later')).toBeDefined();
    expect(await read('TS#forever')).toBeDefined();
  }, 90_000);
});
