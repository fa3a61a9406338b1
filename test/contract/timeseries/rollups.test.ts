import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchWriteCommand, QueryCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { randomUUID } from 'node:crypto';
import { aggregateTimeseries } from '../../../lambdas/domain/data/aggregation';
import { createWorkspace, updateWorkspace } from '../../../lambdas/domain/tenancy/workspaces';
import { AggregateQuerySchema, type AggregateBucket } from '../../../lambdas/schemas/timeseries';
import { documentClient, type Db } from '../../../lambdas/shared/clients';
import { newId } from '../../../lambdas/shared/ids';
import { parseEvery } from '../../../lambdas/shared/time-buckets';
import type { PointToStore, TimeseriesStore } from '../../../lambdas/stores/timeseries';
import { dynamoDbTimeseriesStore } from '../../../lambdas/stores/timeseries/dynamodb';
import { clearRetentionOwed } from '../../../lambdas/stores/workspace-store';
import { ensureTable } from '../../../local/dynamodb-local';
import { clientAggregate, expectBucketsClose } from '../../helpers/buckets';
import { newAccount } from '../../helpers/callers';
import { freshTable } from '../../helpers/db';
import { collect } from './timeseries-store-contract';

/**
 * Rollups of sealed hours (lambdas/domain/data/rollups.ts) on DynamoDB Local: what an aggregation keeps,
 * when the next one uses it instead of the points, and when it must read the points again.
 */
let db: Db;
let series: Db;
let store: TimeseriesStore;
let account: Awaited<ReturnType<typeof newAccount>>;
/** The Queries the store sent, by partition kind: `TS` points, `R` rollups, `S` stamps. */
let queries: Array<{ kind: string; consistent: boolean; start?: string }> = [];
/** While set, a batch write of points (TS# items) fails, as a throttled one that ran out of retries does. */
let failPointWrites = false;
beforeAll(async () => {
  db = await freshTable();
  const client = new DynamoDBClient({});
  const table = `timeseries-${randomUUID()}`;
  await ensureTable(client, table);
  series = { doc: documentClient(client), table };
  const send = series.doc.send.bind(series.doc);
  series.doc.send = ((command: {
    input: {
      ExpressionAttributeValues?: Record<string, unknown>;
      ConsistentRead?: boolean;
      RequestItems?: Record<string, Array<{ PutRequest?: { Item: { pk: string } } }>>;
    };
  }) => {
    const puts = command instanceof BatchWriteCommand ? Object.values(command.input.RequestItems ?? {}).flat() : [];
    if (failPointWrites && puts.some((put) => put.PutRequest?.Item?.pk.startsWith('TS#')))
      return Promise.reject(Object.assign(new Error('Throughput exceeds the current capacity.'), { name: 'ThrottlingException' }));
    const pk = command instanceof QueryCommand ? command.input.ExpressionAttributeValues?.[':pk'] : undefined;
    if (typeof pk === 'string')
      queries.push({
        kind: pk.split('#')[0],
        consistent: command.input.ConsistentRead === true,
        start: command.input.ExpressionAttributeValues?.[':start'] as string | undefined,
      });
    return send(command as never);
  }) as never;
  store = dynamoDbTimeseriesStore(series, { writeConcurrency: 4 });
  account = await newAccount(db);
});
beforeEach(() => (queries = []));

const DAY = '2026-03-10';
const FLEET = newId('flt');
const devices = [newId('dev'), newId('dev'), newId('dev')];

/** Points of three devices every 7 minutes over DAY, a temperature each (every tenth none). */
const dayOfPoints = (workspace_id: string): PointToStore[] =>
  Array.from({ length: (24 * 60) / 7 }, (_, i) => {
    const at = new Date(Date.parse(`${DAY}T00:00:00Z`) + i * 7 * 60_000 + i).toISOString();
    return {
      workspace_id,
      fleet_id: FLEET,
      device_id: devices[i % 3],
      tag: i % 2 ? 'a' : 'b',
      timestamp_device: at,
      timestamp_in: at,
      payload: i % 10 ? { temp: ((i * 37) % 101) - 50.5 } : { other: i },
    };
  });

const aggregate = async (workspaceId: string, query: Record<string, string | string[]>, now?: number) => {
  const page = await aggregateTimeseries(
    db,
    store,
    account.caller,
    workspaceId,
    AggregateQuerySchema.parse({ field: 'temp', start: `${DAY}T00:00:00Z`, end: `${DAY}T23:59:59.999Z`, ...query }),
    now,
  );
  const buckets: AggregateBucket[] = [];
  for await (const bucket of page.buckets) buckets.push(bucket);
  return { buckets, skipped: page.skipped() };
};

/** What a client computes from the storage query of the same range. */
const expected = async (workspaceId: string, every: string, zone: string, groupByDevice: boolean, devicesOf?: string[]) => {
  const raw = await collect(
    store.query({ workspaceId, start: `${DAY}T00:00:00Z`, end: `${DAY}T23:59:59.999Z`, devices: devicesOf, from: 0, size: 100_000, order: 'asc' }),
  );
  return clientAggregate(raw, parseEvery(every)!, zone, ['temp'], groupByDevice);
};

const rollupItems = async (workspaceId: string) =>
  (
    ((
      await series.doc.send(
        new ScanCommand({ TableName: series.table, FilterExpression: 'begins_with(pk, :r)', ExpressionAttributeValues: { ':r': `R#${workspaceId}#` } }),
      )
    ).Items ?? []) as Array<{ sk: string; v: number; s?: string }>
  ).sort((a, b) => a.sk.localeCompare(b.sk));

const newWorkspace = async () => (await createWorkspace(db, account.caller, { name: 'rollups', description: '' })).id;

describe('rollups of sealed hours', () => {
  it('are kept by an aggregation that read each hour whole (its points read strongly consistent), and the next one reads no point', async () => {
    const id = await newWorkspace();
    await store.write(dayOfPoints(id));

    const first = await aggregate(id, { every: '1h', group_by: 'device' });
    const pointReads = queries.filter((q) => q.kind === 'TS');
    expect(pointReads.length).toBeGreaterThan(0);
    expect(pointReads.every((q) => q.consistent)).toBe(true);
    expect(first.buckets).toEqual((await expected(id, '1h', 'UTC', true)).buckets);
    // The last hour ends after the range does: read whole only up to 23:59:59.999, it is not kept.
    expect((await rollupItems(id)).map((item) => item.sk)).toEqual(Array.from({ length: 23 }, (_, h) => `${DAY}T${String(h).padStart(2, '0')}:00:00.000Z`));

    queries = [];
    const again = await aggregate(id, { every: '1h', group_by: 'device' });
    expect(again).toEqual(first);
    // Only the last hour, from its points.
    expect(queries.filter((q) => q.kind === 'TS').every((q) => q.start !== undefined && q.start >= `${DAY}T22:59`)).toBe(true);

    // Days, of all devices: sums of hours, within the rounding of adding in another order.
    queries = [];
    const days = await aggregate(id, { every: '1d', tz: 'Europe/Rome' });
    expectBucketsClose(days.buckets, await expected(id, '1d', 'Europe/Rome', false));
    expect(days.skipped).toBe((await expected(id, '1d', 'Europe/Rome', false)).skipped);
  });

  it('are not used for an hour a write stored points in after it was sealed: that hour is read again, and kept anew', async () => {
    const id = await newWorkspace();
    await store.write(dayOfPoints(id));
    await aggregate(id, { every: '1h', group_by: 'device' });
    const late = `${DAY}T10:30:00.000Z`;
    await store.write([
      {
        workspace_id: id,
        fleet_id: FLEET,
        device_id: devices[0],
        tag: 'a',
        timestamp_device: late,
        timestamp_in: new Date().toISOString(),
        payload: { temp: 1000 },
      },
    ]);

    queries = [];
    const after = await aggregate(id, { every: '1h', group_by: 'device' });
    // The stamped hour and the last, from a span before each (a pack may start there).
    const reread = queries.filter((q) => q.kind === 'TS').map((q) => q.start!.slice(0, 13));
    expect(new Set(reread)).toEqual(new Set([`${DAY}T09`, `${DAY}T22`]));
    expect(after.buckets).toEqual((await expected(id, '1h', 'UTC', true)).buckets);
    expect(after.buckets.find((b) => b.start === `${DAY}T10:00:00.000Z` && b.device_id === devices[0])?.max).toBe(1000);
    const stamped = (await rollupItems(id)).find((item) => item.sk === `${DAY}T10:00:00.000Z`)!;
    expect(stamped.s).toEqual(expect.any(String));

    // Kept again under the stamp it was read after: the next aggregation reads only the last hour.
    queries = [];
    await aggregate(id, { every: '1h', group_by: 'device' });
    expect(new Set(queries.filter((q) => q.kind === 'TS').map((q) => q.start!.slice(0, 13)))).toEqual(new Set([`${DAY}T22`]));
  });

  it('are neither used nor kept for an hour whose late write stamped it pending and then failed, until a retry finishes', async () => {
    const id = await newWorkspace();
    await store.write(dayOfPoints(id));
    const before = await aggregate(id, { every: '1h', group_by: 'device' });
    const late: PointToStore = {
      workspace_id: id,
      fleet_id: FLEET,
      device_id: devices[1],
      tag: 'a',
      timestamp_device: `${DAY}T05:20:00.000Z`,
      timestamp_in: new Date().toISOString(),
      payload: { temp: -1000 },
    };

    failPointWrites = true;
    await expect(store.write([late])).rejects.toThrow('Throughput exceeds');
    failPointWrites = false;
    const stamps = ((
      await series.doc.send(new ScanCommand({ TableName: series.table, FilterExpression: 'pk = :s', ExpressionAttributeValues: { ':s': `S#${id}` } }))
    ).Items ?? []) as Array<{ sk: string; p?: boolean }>;
    // The first write stamped every hour of the day (written late, as a replay of old data is); this one its hour, pending.
    expect(stamps.filter((stamp) => stamp.p).map((stamp) => stamp.sk)).toEqual([`${DAY}T05:00:00.000Z`]);

    // The pending hour is read from its points (it may hold part of the write) and its old rollup stays.
    queries = [];
    expect(await aggregate(id, { every: '1h', group_by: 'device' })).toEqual(before);
    expect(new Set(queries.filter((q) => q.kind === 'TS').map((q) => q.start!.slice(0, 13)))).toEqual(new Set([`${DAY}T04`, `${DAY}T22`]));
    const kept = async () => (await rollupItems(id)).find((item) => item.sk === `${DAY}T05:00:00.000Z`)?.s;
    const keptBefore = await kept();
    expect(keptBefore).toEqual(expect.any(String));
    expect(await kept()).toBe(keptBefore);

    // The batch retried: stored, stamped final, read again and kept under that stamp.
    await store.write([late]);
    const after = await aggregate(id, { every: '1h', group_by: 'device' });
    expect(after.buckets.find((b) => b.start === `${DAY}T05:00:00.000Z` && b.device_id === devices[1])?.min).toBe(-1000);
    expect(after.buckets).toEqual((await expected(id, '1h', 'UTC', true)).buckets);
    expect(await kept()).not.toBe(keptBefore);
  });

  it('expire: a rollup within its cache lifetime (sooner with its points under a retention), a stamp after every rollup kept before it', async () => {
    const id = await newWorkspace();
    await store.write(dayOfPoints(id));
    const now = Date.now();
    await aggregate(id, { every: '1h' }, now);
    const items = ((
      await series.doc.send(
        new ScanCommand({
          TableName: series.table,
          FilterExpression: 'begins_with(pk, :r) OR pk = :s',
          ExpressionAttributeValues: { ':r': `R#${id}#`, ':s': `S#${id}` },
        }),
      )
    ).Items ?? []) as Array<{ pk: string; expires: number }>;
    const days = (item: { expires: number }) => Math.round((item.expires * 1000 - now) / 86_400_000);
    expect(new Set(items.filter((i) => i.pk.startsWith('R#')).map(days))).toEqual(new Set([90]));
    expect(new Set(items.filter((i) => i.pk.startsWith('S#')).map(days))).toEqual(new Set([100]));
  });

  it('are stamped by a write into hours that ended 1 h 50 min before it (the sealing, ten minutes early for other clocks), not into later ones', async () => {
    const id = await newWorkspace();
    const clocked = dynamoDbTimeseriesStore(series, { writeConcurrency: 2, now: () => Date.parse(`${DAY}T12:00:00Z`) });
    const at = (time: string): PointToStore => ({
      workspace_id: id,
      fleet_id: FLEET,
      device_id: devices[0],
      tag: 'a',
      timestamp_device: `${DAY}T${time}Z`,
      timestamp_in: `${DAY}T12:00:00.000Z`,
      payload: { temp: 1 },
    });

    await clocked.write([at('08:59:59.999'), at('09:30:00.000'), at('10:00:00.000'), at('11:59:00.000')]);

    const stamps = ((
      await series.doc.send(new ScanCommand({ TableName: series.table, FilterExpression: 'pk = :s', ExpressionAttributeValues: { ':s': `S#${id}` } }))
    ).Items ?? []) as Array<{ sk: string; p?: boolean }>;
    expect(stamps.map((stamp) => [stamp.sk, stamp.p ?? false]).sort()).toEqual([
      [`${DAY}T08:00:00.000Z`, false],
      [`${DAY}T09:00:00.000Z`, false],
    ]);
  });

  it('are kept only for hours that ended two hours ago, whatever the range asks', async () => {
    const id = await newWorkspace();
    await store.write(dayOfPoints(id));
    await aggregate(id, { every: '1h' }, Date.parse(`${DAY}T12:30:00Z`));
    expect((await rollupItems(id)).map((item) => item.sk).at(-1)).toBe(`${DAY}T09:00:00.000Z`);
  });

  it('serve a filter of devices, which keeps none; tags and fleets, and hours that no bucket holds whole, read the points', async () => {
    const id = await newWorkspace();
    await store.write(dayOfPoints(id));
    const filtered = await aggregate(id, { every: '1h', device: [devices[1]] });
    expect(filtered.buckets).toEqual((await expected(id, '1h', 'UTC', false, [devices[1]])).buckets);
    expect(await rollupItems(id)).toEqual([]);

    await aggregate(id, { every: '1h', group_by: 'device' });
    queries = [];
    const served = await aggregate(id, { every: '1h', device: [devices[1]] });
    expect(served).toEqual(filtered);
    expect(queries.filter((q) => q.kind === 'TS').length).toBeLessThanOrEqual(8);

    for (const query of [{ every: '1h', tag: ['a'] }, { every: '1h', tz: 'Asia/Kathmandu' }, { every: '15m' }] as Array<Record<string, string | string[]>>) {
      queries = [];
      await aggregate(id, query);
      expect(queries.filter((q) => q.kind === 'TS' && q.start! < `${DAY}T01`).length).toBeGreaterThan(0);
    }
    const zoned = await aggregate(id, { every: '1h', tz: 'Asia/Kathmandu' });
    expect(zoned.buckets).toEqual((await expected(id, '1h', 'Asia/Kathmandu', false)).buckets);
  });

  it('are not used after a change of the data retention, nor kept until its re-stamp is done', async () => {
    const id = await newWorkspace();
    await store.write(dayOfPoints(id));
    const before = await aggregate(id, { every: '1h', group_by: 'device' });
    await updateWorkspace(db, async () => undefined, account.caller, id, { data_retention_days: 3650 });

    queries = [];
    expect(await aggregate(id, { every: '1h', group_by: 'device' })).toEqual(before);
    expect(queries.filter((q) => q.kind === 'TS' && q.start! < `${DAY}T01`).length).toBeGreaterThan(0);
    expect(new Set((await rollupItems(id)).map((item) => item.v))).toEqual(new Set([0]));

    await clearRetentionOwed(db, account.caller.accountId, id, 1);
    await aggregate(id, { every: '1h', group_by: 'device' });
    expect(new Set((await rollupItems(id)).map((item) => item.v))).toEqual(new Set([1]));
    queries = [];
    expect(await aggregate(id, { every: '1h', group_by: 'device' })).toEqual(before);
    expect(queries.filter((q) => q.kind === 'TS' && q.start! < `${DAY}T22`)).toEqual([]);
  });
});
