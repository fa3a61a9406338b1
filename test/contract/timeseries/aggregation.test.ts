import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { QueryCommand, TimestreamQueryClient } from '@aws-sdk/client-timestream-query';
import { mockClient } from 'aws-sdk-client-mock';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { aggregateTimeseries } from '../../../lambdas/domain/data/aggregation';
import { createWorkspace, updateWorkspace } from '../../../lambdas/domain/tenancy/workspaces';
import { AggregateQuerySchema, type AggregateBucket } from '../../../lambdas/schemas/timeseries';
import { documentClient, type Db } from '../../../lambdas/shared/clients';
import { NotFoundError, ValidationError } from '../../../lambdas/shared/errors';
import { newId } from '../../../lambdas/shared/ids';
import { parseEvery } from '../../../lambdas/shared/time-buckets';
import type { DataPoint, PointToStore, TimeseriesStore } from '../../../lambdas/stores/timeseries';
import { dynamoDbTimeseriesStore } from '../../../lambdas/stores/timeseries/dynamodb';
import { buildAggregateSql, buildRangeSql, timestreamStore } from '../../../lambdas/stores/timeseries/timestream';
import { ensureTable } from '../../../local/dynamodb-local';
import { clientAggregate, expectBucketsClose } from '../../helpers/buckets';
import { newAccount } from '../../helpers/callers';
import { freshTable } from '../../helpers/db';
import { collect } from './timeseries-store-contract';

let db: Db;
let store: TimeseriesStore;
let account: Awaited<ReturnType<typeof newAccount>>;
beforeAll(async () => {
  db = await freshTable();
  const client = new DynamoDBClient({});
  const table = `timeseries-${randomUUID()}`;
  await ensureTable(client, table);
  store = dynamoDbTimeseriesStore({ doc: documentClient(client), table }, { writeConcurrency: 4 });
  account = await newAccount(db);
});

/** The aggregation's query as the handler parses it from the request's parameters. */
const paramsOf = (query: Record<string, string | string[] | undefined>) =>
  AggregateQuerySchema.parse(Object.fromEntries(Object.entries(query).filter(([, v]) => v !== undefined)));

/** Every page of an aggregation, following `next`: the buckets in order, and the points skipped in all. */
const allPages = async (workspaceId: string, query: Record<string, string | string[] | undefined>, now?: number) => {
  const buckets: AggregateBucket[] = [];
  let skipped = 0;
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await aggregateTimeseries(db, store, account.caller, workspaceId, paramsOf({ ...query, cursor }), now);
    for await (const bucket of page.buckets) buckets.push(bucket);
    skipped += page.skipped();
    cursor = page.next() ?? undefined;
    pages++;
  } while (cursor);
  return { buckets, skipped, pages };
};

// Around Europe/Rome's and America/New_York's fall-back (2026-10-25, 2026-11-01), and a quiet week.
const WINDOWS = [Date.parse('2026-10-24T00:00:00Z'), Date.parse('2026-10-31T12:00:00Z'), Date.parse('2026-06-10T00:00:00Z')];
const SPAN = 3 * 86_400_000;

/** A payload: the field as a number (small, large, or past a double's sum), or missing, or of another type. */
const payloadArb = fc.oneof(
  { arbitrary: fc.double({ min: -1e6, max: 1e6, noNaN: true }).map((temp) => ({ temp, env: { temp: temp / 2 } })), weight: 6 },
  { arbitrary: fc.integer({ min: -1000, max: 1000 }).map((temp) => ({ temp, env: { temp } })), weight: 3 },
  { arbitrary: fc.constant({ temp: 1.7e308, env: { temp: -1.7e308 } }), weight: 1 },
  {
    arbitrary: fc.constantFrom<unknown>({ temp: '21.5' }, { temp: null }, { temp: true }, { temp: [1] }, { env: 3 }, { other: 1 }, 'text', [21.5], null),
    weight: 4,
  },
  { arbitrary: fc.double({ min: -50, max: 50, noNaN: true }), weight: 2 },
);

const scenarioArb = fc.record({
  window: fc.constantFrom(...WINDOWS),
  points: fc.array(
    fc.record({
      device: fc.nat(2),
      tag: fc.constantFrom('a', 'b'),
      at: fc.nat(SPAN - 1),
      // a cloud stamp: microseconds into its millisecond (with an origin of its own)
      us: fc.oneof({ arbitrary: fc.constant(0), weight: 4 }, { arbitrary: fc.integer({ min: 1, max: 999 }), weight: 1 }),
      payload: payloadArb,
      // the device sends it again later with another payload: a replay, never counted twice
      replayed: fc.boolean(),
    }),
    { maxLength: 120 },
  ),
  every: fc.constantFrom('1m', '15m', '1h', '2h', '12h', '1d', '2d'),
  tz: fc.constantFrom('UTC', 'Europe/Rome', 'America/New_York', 'Asia/Kathmandu'),
  field: fc.constantFrom<string | undefined>('temp', 'env.temp', undefined),
  groupBy: fc.boolean(),
  // small pages often: a last page that is exactly full, with points that hold no number after it
  limit: fc.oneof(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 25 })),
  from: fc.option(fc.nat(SPAN), { nil: undefined }),
  length: fc.option(fc.nat(SPAN), { nil: undefined }),
  // half without: only those are answered from rollups
  tags: fc.option(fc.constant<string[]>(['a']), { nil: undefined, freq: 1 }),
});

describe('aggregation on the dynamodb store: what a client computes from the raw points (fast-check)', () => {
  it('answers, over all its pages, exactly the buckets and skipped count a client computes from the storage query', async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, async (s) => {
        const { id: workspace_id } = await createWorkspace(db, account.caller, { name: 'prop', description: '' });
        const devices = [newId('dev'), newId('dev'), newId('dev')];
        const fleet = newId('flt');
        const written: PointToStore[] = s.points.map((p, i) => {
          const iso = new Date(s.window + p.at).toISOString();
          return {
            workspace_id,
            fleet_id: fleet,
            device_id: devices[p.device],
            tag: p.tag,
            timestamp_device: p.us ? `${iso.slice(0, -1)}${String(p.us).padStart(3, '0')}Z` : iso,
            timestamp_in: new Date(s.window + SPAN + i).toISOString(),
            ...(p.us ? { origin: randomUUID().replaceAll('-', '') } : {}),
            payload: p.payload,
          };
        });
        const replays = written
          .filter((p, i) => s.points[i].replayed && !p.origin)
          .map((p) => ({ ...p, payload: { temp: 1e9 }, timestamp_in: new Date(s.window + 2 * SPAN).toISOString() }));
        if (written.length) await store.write(written);
        if (replays.length) await store.write(replays);
        const start = s.from === undefined ? undefined : new Date(s.window + s.from).toISOString();
        const end = s.length === undefined ? undefined : new Date(s.window + (s.from ?? 0) + s.length).toISOString();
        const query = { start, end, tag: s.tags, every: s.every, tz: s.tz, field: s.field, group_by: s.groupBy ? 'device' : undefined, limit: String(s.limit) };

        // The clock of the answers: past every arrival, the points' hours long sealed. Not the wall
        // clock, which would put months of empty sealed hours (rollups read and kept) between the
        // points and an open end, more of them every day.
        const now = s.window + 3 * SPAN;

        const raw = await collect(store.query({ workspaceId: workspace_id, start, end, tags: s.tags, from: 0, size: 100_000, order: 'asc' }));
        const expected = clientAggregate(raw, parseEvery(s.every)!, s.tz, s.field?.split('.') ?? [], s.groupBy);
        const answered = await allPages(workspace_id, query, now);

        expect(answered.buckets).toEqual(expected.buckets);
        expect(answered.skipped).toBe(expected.skipped);
        expect(answered.pages).toBe(Math.max(1, Math.ceil(expected.buckets.length / s.limit)));
        // Again, now from the rollups the first answer kept (its hours are days past): the same
        // but for the order sums were added in.
        const again = await allPages(workspace_id, query, now);
        expectBucketsClose(again.buckets, expected);
        expect(again.skipped).toBe(expected.skipped);
        expect(again.pages).toBe(answered.pages);
      }),
      { numRuns: Number(process.env.AGGREGATION_RUNS ?? 20), seed: Number(process.env.FUZZ_SEED ?? 20) },
    );
    // 81 s of its 120 in a loaded CI run: a bound that leaves room.
  }, 300_000);
});

describe('aggregation', () => {
  const at = (iso: string) => new Date(iso).toISOString();
  const point = (workspace_id: string, device_id: string, timestamp_device: string, payload: unknown): DataPoint => ({
    workspace_id,
    fleet_id: account.default_fleet_id,
    device_id,
    tag: 't',
    timestamp_device,
    timestamp_in: timestamp_device,
    payload,
  });

  it('answers only the functions asked for, in their order, and each bucket once across pages of one', async () => {
    const { id } = await createWorkspace(db, account.caller, { name: 'fn', description: '' });
    const device = newId('dev');
    await store.write([0, 1, 2].map((h) => point(id, device, at(`2026-01-01T0${h}:10:00Z`), { temp: h })));

    // A day later (not the wall clock): the pages after the first read from their bucket on, to
    // the hours sealed by then.
    const { buckets, pages } = await allPages(id, { field: 'temp', fn: 'max,avg', limit: '1' }, Date.parse('2026-01-02T00:00:00Z'));

    expect(pages).toBe(3);
    expect(buckets).toEqual([0, 1, 2].map((h) => ({ start: at(`2026-01-01T0${h}:00:00Z`), avg: h, max: h })));
    expect(buckets.map((b) => Object.keys(b))).toEqual(Array(3).fill(['start', 'avg', 'max']));
  });

  it('leaves out what the workspace’s retention no longer keeps, at once', async () => {
    const { id } = await createWorkspace(db, account.caller, { name: 'retention', description: '' });
    const device = newId('dev');
    const now = Date.parse('2026-05-31T12:00:00Z');
    await store.write([point(id, device, at('2026-05-01T10:00:00Z'), { temp: 1 }), point(id, device, at('2026-05-30T10:00:00Z'), { temp: 2 })]);
    await updateWorkspace(db, async () => undefined, account.caller, id, { data_retention_days: 7 }, now);

    const { buckets } = await allPages(id, { field: 'temp', every: '1d', start: at('2026-01-01T00:00:00Z') }, now);

    expect(buckets).toEqual([{ start: at('2026-05-30T00:00:00Z'), avg: 2, min: 2, max: 2, sum: 2, count: 1 }]);
  });

  it('refuses a cursor of another list, and another account’s workspace or fleet, before reading anything', async () => {
    const theirs = await newAccount(db, 'theirs');
    const { id } = await createWorkspace(db, account.caller, { name: 'cursor', description: '' });
    const device = newId('dev');
    await store.write([1, 2].map((h) => point(id, device, at(`2026-01-01T0${h}:00:00Z`), 1)));
    const first = await aggregateTimeseries(db, store, account.caller, id, paramsOf({ limit: '1' }));
    for await (const _ of first.buckets);
    const cursor = first.next()!;

    await expect(aggregateTimeseries(db, store, theirs.caller, theirs.workspace_id, paramsOf({ cursor }))).rejects.toThrow(ValidationError);
    await expect(aggregateTimeseries(db, store, account.caller, theirs.workspace_id, paramsOf({}))).rejects.toThrow(NotFoundError);
    await expect(aggregateTimeseries(db, store, account.caller, id, paramsOf({ fleet: [theirs.default_fleet_id] }))).rejects.toThrow(NotFoundError);
  });
});

describe('aggregation on the timestream store (SDK mocked)', () => {
  const setup = () => {
    const queryClient = new TimestreamQueryClient({ region: 'us-east-1' });
    const queries = mockClient(queryClient);
    return { queries, timestream: timestreamStore({ database: 'fleetstream', table: 'datapoints', queryClient }) };
  };
  const columns = (names: string[]) => names.map((Name) => ({ Name, Type: { ScalarType: 'VARCHAR' } })) as never;
  const rowOf = (values: Array<string | undefined>) => ({
    Data: values.map((ScalarValue) => (ScalarValue === undefined ? { NullValue: true } : { ScalarValue })),
  });
  const run = async (timestream: TimeseriesStore, workspaceId: string, query: Record<string, string | string[] | undefined>) => {
    const page = await aggregateTimeseries(db, timestream, account.caller, workspaceId, paramsOf(query));
    const buckets: AggregateBucket[] = [];
    for await (const b of page.buckets) buckets.push(b);
    return { buckets, skipped: page.skipped(), next: page.next() };
  };

  it('aggregates the payload itself in SQL with bin(), shifted by a zone’s constant offset, and answers its rows', async () => {
    const { queries, timestream } = setup();
    const start = '2026-01-10T00:00:00.000Z';
    const end = '2026-01-12T00:00:00.000Z';
    const sql = buildAggregateSql('fleetstream', 'datapoints', {
      range: { workspaceId: account.workspace_id, start, end },
      every: { amount: 1, unit: 'd' },
      offsetMinutes: 330,
      groupByDevice: true,
    });
    queries.on(QueryCommand).resolves({
      QueryId: 'q',
      ColumnInfo: columns(['bucket_ms', 'device_id', 'points', 'numbers', 'total', 'low', 'high']),
      Rows: [
        rowOf([String(Date.parse('2026-01-09T18:30:00Z')), 'dev-a', '3', '2', '3.5', '1.5', '2']),
        rowOf([String(Date.parse('2026-01-09T18:30:00Z')), 'dev-b', '2', '0', undefined, undefined, undefined]),
        rowOf([String(Date.parse('2026-01-10T18:30:00Z')), 'dev-a', '1', '1', '-4', '-4', '-4']),
      ],
      $metadata: {},
    });

    const answer = await run(timestream, account.workspace_id, { start, end, every: '1d', tz: 'Asia/Kolkata', group_by: 'device' });

    expect(queries.commandCalls(QueryCommand).map((c) => c.args[0].input.QueryString)).toEqual([sql]);
    expect(sql).toContain('bin(time + 330m, 1d) - 330m');
    expect(sql).toContain('try_cast(payload AS DOUBLE)');
    expect(answer).toEqual({
      buckets: [
        { start: '2026-01-09T18:30:00.000Z', device_id: 'dev-a', avg: 1.75, min: 1.5, max: 2, sum: 3.5, count: 2 },
        { start: '2026-01-10T18:30:00.000Z', device_id: 'dev-a', avg: -4, min: -4, max: -4, sum: -4, count: 1 },
      ],
      skipped: 3,
      next: null,
    });
  });

  it('shifts the other way west of UTC, and not at all in UTC', () => {
    const range = { workspaceId: account.workspace_id, start: '2026-06-01T00:00:00.000Z' };
    const west = buildAggregateSql('fleetstream', 'datapoints', { range, every: { amount: 15, unit: 'm' }, offsetMinutes: -240, groupByDevice: false });
    const utc = buildAggregateSql('fleetstream', 'datapoints', { range, every: { amount: 2, unit: 'h' }, offsetMinutes: 0, groupByDevice: false });

    expect(west).toContain('SELECT to_milliseconds(bin(time - 240m, 15m) + 240m) AS bucket_ms, count(*) AS points');
    expect(west).toContain('GROUP BY bin(time - 240m, 15m) + 240m ORDER BY bucket_ms');
    expect(utc).toContain(
      'SELECT to_milliseconds(bin(time, 2h)) AS bucket_ms, count(*) AS points, count(v) AS numbers, sum(v) AS total, min(v) AS low, max(v) AS high FROM (SELECT time, device_id, try_cast(payload AS DOUBLE) AS v FROM (',
    );
    expect(utc).toContain(') WHERE copy = 1) GROUP BY bin(time, 2h) ORDER BY bucket_ms');
  });

  it('reads the range and aggregates in the Lambda a field of the payload, or days across a DST change, which its SQL cannot say', async () => {
    const { queries, timestream } = setup();
    const rangeRows = {
      QueryId: 'q',
      ColumnInfo: columns(['device_id', 'tag', 'fleet_id', 'payload', 'timestamp_in', 'time_ns']),
      Rows: [
        rowOf(['dev-a', 't', 'flt-a', '{"temp":20}', String(Date.parse('2026-10-25T01:30:00Z')), `${Date.parse('2026-10-25T01:30:00Z')}000000`]),
        rowOf(['dev-a', 't', 'flt-a', '{"temp":"x"}', String(Date.parse('2026-10-25T20:00:00Z')), `${Date.parse('2026-10-25T20:00:00Z')}000000`]),
        rowOf(['dev-a', 't', 'flt-a', '{"temp":22}', String(Date.parse('2026-10-25T22:30:00Z')), `${Date.parse('2026-10-25T22:30:00Z')}000000`]),
      ],
      $metadata: {},
    };
    queries.on(QueryCommand).resolves(rangeRows);
    const start = '2026-10-24T00:00:00.000Z';
    const end = '2026-10-27T00:00:00.000Z';

    const byField = await run(timestream, account.workspace_id, { start, end, every: '1d', tz: 'UTC', field: 'temp', fn: 'sum' });
    const acrossDst = await run(timestream, account.workspace_id, { start, end, every: '1d', tz: 'Europe/Rome', field: 'temp', fn: 'sum,count' });
    // After the change, but in a day that began before it: not a fixed grid either.
    const dayOfChange = await run(timestream, account.workspace_id, { start: '2026-10-25T12:00:00.000Z', end, every: '1d', tz: 'Europe/Rome' });

    const range = buildRangeSql('fleetstream', 'datapoints', { workspaceId: account.workspace_id, start, end });
    expect(queries.commandCalls(QueryCommand).map((c) => c.args[0].input.QueryString)).toEqual([
      range,
      range,
      buildRangeSql('fleetstream', 'datapoints', { workspaceId: account.workspace_id, start: '2026-10-25T12:00:00.000Z', end }),
    ]);
    expect(dayOfChange.buckets).toEqual([]);
    expect(byField).toEqual({ buckets: [{ start: '2026-10-25T00:00:00.000Z', sum: 42 }], skipped: 1, next: null });
    // Rome's 25-hour day of 2026-10-25 runs from 22:00 UTC the day before to 23:00 UTC.
    expect(acrossDst).toEqual({ buckets: [{ start: '2026-10-24T22:00:00.000Z', sum: 42, count: 2 }], skipped: 1, next: null });
  });
});
