import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { randomUUID } from 'node:crypto';
import { documentClient, type Db } from '../../../lambdas/shared/clients';
import { newId } from '../../../lambdas/shared/ids';
import type { DataPoint, TimeseriesQuery, TimeseriesStore } from '../../../lambdas/stores/timeseries';
import { ensureTable } from '../../../local/dynamodb-local';
import { dynamoDbTimeseriesStore } from '../../../lambdas/stores/timeseries/dynamodb';
import { seriesPartition, shardOf } from '../../../lambdas/stores/timeseries/keys';
import { asDataPoint, collect, collectRange, describeTimeseriesStore } from './timeseries-store-contract';

const freshTimeseriesTable = async (): Promise<Db> => {
  const client = new DynamoDBClient({});
  const table = `timeseries-${randomUUID()}`;
  await ensureTable(client, table);
  return { doc: documentClient(client), table };
};

describeTimeseriesStore('dynamodb on DynamoDB Local', async () => dynamoDbTimeseriesStore(await freshTimeseriesTable(), { writeConcurrency: 2 }));

describe('dynamodb time-series store across containers', () => {
  // Stores on one table stand for Lambda containers: none knows what another wrote, so their
  // duplicates reach the table, where readers keep the earliest arrival of each key.
  const containers = async (count = 2) => {
    const db = await freshTimeseriesTable();
    const stores = Array.from({ length: count }, (_, i) => dynamoDbTimeseriesStore(db, { writeConcurrency: 1 + (i % 3) }));
    // The points' items (a write into an hour long past also stamps it: S# items, not counted here).
    const scan = async () => ((await db.doc.send(new ScanCommand({ TableName: db.table }))).Items ?? []).filter((item) => String(item.pk).startsWith('TS#'));
    const itemsInTable = async () => (await scan()).length;
    // Every point stored, read or not: the rows of every pack.
    const pointsInTable = async () => (await scan()).reduce((sum, item) => sum + (JSON.parse(item.p as string) as { r: unknown[] }).r.length, 0);
    return { db, stores, itemsInTable, pointsInTable };
  };
  const workspace_id = newId('wks');
  const arrived = (ms: number) => new Date(Date.UTC(2024, 5, 1) + ms).toISOString();
  const points = (count: number, payload: string, timestamp_in = arrived(0), devices = 7): DataPoint[] =>
    Array.from({ length: count }, (_, i) => ({
      workspace_id,
      fleet_id: newId('flt'),
      device_id: `dev-${String(i % devices).padStart(20, '0')}`,
      tag: 'level',
      timestamp_device: new Date(Date.UTC(2024, 0, 1) + i).toISOString(),
      timestamp_in,
      payload,
    }));
  const query = (q: Partial<TimeseriesQuery> = {}): TimeseriesQuery => ({ workspaceId: workspace_id, from: 0, size: 10_000, order: 'asc', ...q });
  const payloads = async (store: TimeseriesStore, q: Partial<TimeseriesQuery> = {}) => (await collect(store.query(query(q)))).map((p) => p.payload);

  it('keeps the first arrival when another container stores a later one, which no read returns', async () => {
    const {
      stores: [first, second],
      pointsInTable,
    } = await containers();
    await first.write(points(230, 'first', arrived(0)));

    const result = await second.write(points(230, 'second', arrived(1000)));

    expect(result).toEqual({ written: 230, discarded: 0 });
    expect(await pointsInTable()).toBe(460);
    expect(new Set(await payloads(second))).toEqual(new Set(['first']));
    expect(await payloads(second, { order: 'desc' })).toHaveLength(230);
    expect(new Set(await payloads(second, { order: 'desc' }))).toEqual(new Set(['first']));
  });

  it('keeps the earliest arrival whatever order the writes land in', async () => {
    const {
      stores: [first, second],
    } = await containers();
    // A message retried after a failure lands after a later duplicate: it still arrived first.
    await second.write(points(100, 'late', arrived(5000)));

    await first.write(points(100, 'early', arrived(10)));

    expect(new Set(await payloads(first))).toEqual(new Set(['early']));
    expect(new Set(await payloads(second, { order: 'desc' }))).toEqual(new Set(['early']));
  });

  it('stores a retried write once: the same arrival rewrites the same items', async () => {
    const {
      stores: [first, second],
      itemsInTable,
      pointsInTable,
    } = await containers();
    const batch = points(120, 'once', arrived(7));
    await first.write(batch);
    const items = await itemsInTable();

    await second.write(batch);

    expect(await itemsInTable()).toBe(items);
    expect(await pointsInTable()).toBe(120);
    expect(await payloads(first)).toHaveLength(120);
  });

  it('pages through many arrivals per key in either order without overlap, skip or a later arrival', async () => {
    const { stores } = await containers(5);
    // 5 arrivals of each of 60 keys of one device (one partition), the earliest written last: runs
    // of versions span the boundaries of pages, and of the reads each page needs.
    for (let arrival = 4; arrival >= 0; arrival--) await stores[arrival].write(points(60, `arrival-${arrival}`, arrived(arrival), 1));
    const all = { asc: await collect(stores[0].query(query())), desc: await collect(stores[0].query(query({ order: 'desc' }))) };

    for (const order of ['asc', 'desc'] as const) {
      const paged: DataPoint[] = [];
      for (let from = 0; from < 10; from++) paged.push(...(await collect(stores[0].query(query({ order, from, size: 7 })))));
      expect(paged).toEqual(all[order]);
    }
    expect(all.asc).toHaveLength(60);
    expect(new Set(all.asc.map((p) => p.payload))).toEqual(new Set(['arrival-0']));
    expect(all.desc).toEqual([...all.asc].reverse());
  });

  it('resolves two requests of the same millisecond the same way however their messages are batched or retried', async () => {
    const [one, other] = [points(50, 'one', arrived(42)), points(50, 'other', arrived(42))];
    const winners = async (writes: (stores: TimeseriesStore[]) => Promise<unknown>) => {
      const { stores } = await containers();
      await writes(stores);
      return [await payloads(stores[0]), (await payloads(stores[1], { order: 'desc' })).reverse()];
    };

    const together = await winners(([first]) => first.write([...one, ...other]));
    const reversed = await winners(([first]) => first.write([...other, ...one]));
    const apart = await winners(async ([first, second]) => {
      await second.write(other);
      await first.write(one);
    });
    // A batch of both, then one message retried alone on the same container.
    const retried = await winners(async ([first]) => {
      await first.write([...other, ...one]);
      await first.write(one);
      await first.write(other);
    });

    expect(together[0]).toHaveLength(50);
    expect(new Set(together[0]).size).toBe(1);
    for (const result of [together, reversed, apart, retried]) expect(result).toEqual([together[0], together[0]]);
  });

  it('reads points stored before arrivals were versioned as the first write of their key', async () => {
    const {
      db,
      stores: [store],
    } = await containers();
    const legacy = points(20, 'legacy', arrived(0), 1);
    // The earlier layout: one item per key, sort key without a version, put by a conditional write.
    for (const p of legacy) {
      const sk = `${p.timestamp_device}#${p.device_id}#${p.tag}`;
      const Item = {
        pk: seriesPartition(workspace_id, shardOf(p.device_id)),
        sk,
        device_id: p.device_id,
        tag: p.tag,
        fleet_id: p.fleet_id,
        timestamp_in: p.timestamp_in,
        payload: JSON.stringify(p.payload),
      };
      await db.doc.send(new PutCommand({ TableName: db.table, Item }));
    }

    await store.write(points(30, 'new', arrived(99), 1));

    const ascending = await collect(store.query(query()));
    expect(ascending.map((p) => p.payload)).toEqual([...Array(20).fill('legacy'), ...Array(10).fill('new')]);
    expect(ascending.map((p) => p.timestamp_device)).toEqual(points(30, '', arrived(0), 1).map((p) => p.timestamp_device));
    expect(await collect(store.query(query({ order: 'desc' })))).toEqual([...ascending].reverse());
    // A range read gives their arrival as the query does, from the item's timestamp_in.
    expect((await collectRange(store.readRange({ workspaceId: workspace_id }))).points.map((p) => asDataPoint(workspace_id, p))).toEqual(ascending);
  });

  it('lets one arrival win each key when two containers write the same points at once', async () => {
    const {
      stores: [first, second],
    } = await containers();

    const results = await Promise.all([first.write(points(400, 'a', arrived(3))), second.write(points(400, 'b', arrived(3)))]);

    const ascending = await collect(first.query(query()));
    expect(results.map((r) => r.written)).toEqual([400, 400]);
    expect(ascending).toHaveLength(400);
    // Same arrival time: the payload digest orders them, the same way on every read.
    expect(new Set(ascending.map((p) => p.payload)).size).toBe(1);
    expect(await collect(second.query(query({ order: 'desc' })))).toEqual([...ascending].reverse());
  });

  it('packs points into items of at most four write units: an eighth of a unit a point, not one', async () => {
    const {
      db,
      stores: [store],
    } = await containers();
    const batch = points(2000, { temp: 21.5 } as unknown as string, arrived(0), 40);

    await store.write(batch);

    const { Items = [] } = await db.doc.send(new ScanCommand({ TableName: db.table }));
    // What DynamoDB meters: attribute names and string values in UTF-8.
    const sizes = Items.map((item) => Object.entries(item).reduce((sum, [name, value]) => sum + Buffer.byteLength(name) + Buffer.byteLength(String(value)), 0));
    expect(Math.max(...sizes)).toBeLessThanOrEqual(4096);
    expect(sizes.reduce((units, size) => units + Math.ceil(size / 1024), 0)).toBeLessThanOrEqual(2000 / 8);
    expect(await payloads(store)).toHaveLength(2000);
  });

  it('orders points of packs whose spans overlap, read in pages from a bound inside a span, either way', async () => {
    const { stores } = await containers(3);
    // Three writes of points every 7 ms over a minute, each shifted: their packs interleave.
    const series = (shift: number, payload: string) =>
      Array.from({ length: 8000 }, (_, i) => ({
        ...points(1, payload)[0],
        device_id: `dev-${String(i % 5).padStart(20, '0')}`,
        tag: `t${shift}`,
        timestamp_device: new Date(Date.UTC(2024, 0, 1) + shift + i * 7).toISOString(),
      }));
    await Promise.all(stores.map((store, i) => store.write(series(i, `w${i}`))));
    const start = new Date(Date.UTC(2024, 0, 1) + 15_003).toISOString();
    const end = new Date(Date.UTC(2024, 0, 1) + 41_000).toISOString();
    const expected = [0, 1, 2]
      .flatMap((shift) => series(shift, `w${shift}`))
      .filter((p) => p.timestamp_device >= start && p.timestamp_device < end)
      .map((p) => `${p.timestamp_device}|${p.device_id}|${p.tag}`)
      .sort();

    for (const order of ['asc', 'desc'] as const) {
      const paged: string[] = [];
      for (let from = 0; paged.length < expected.length + 1 && from < 20; from++) {
        const page = await collect(stores[from % 3].query(query({ order, start, end, from, size: 700 })));
        paged.push(...page.map((p) => `${p.timestamp_device}|${p.device_id}|${p.tag}`));
        if (page.length < 700) break;
      }
      expect(paged).toEqual(order === 'asc' ? expected : [...expected].reverse());
    }
  });
});
