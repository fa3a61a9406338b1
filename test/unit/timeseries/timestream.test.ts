import { CancelQueryCommand, QueryCommand, TimestreamQueryClient, type QueryCommandOutput } from '@aws-sdk/client-timestream-query';
import { RejectedRecordsException, ThrottlingException, TimestreamWriteClient, WriteRecordsCommand } from '@aws-sdk/client-timestream-write';
import { mockClient } from 'aws-sdk-client-mock';
import { PayloadTooLargeError, ValidationError } from '../../../lambdas/shared/errors';
import type { DataPoint, RangePoint, TimeseriesQuery } from '../../../lambdas/stores/timeseries';
import { buildQuerySql, buildRangeSql, recordBytes, RejectedPointsError, timestreamStore } from '../../../lambdas/stores/timeseries/timestream';
import { DATA_PAYLOAD_MAX_BYTES } from '../../../lambdas/schemas/device-api';

const WORKSPACE = 'wks-aaaaaaaaaaaaaaaaaaaa';
const FLEET = 'flt-aaaaaaaaaaaaaaaaaaaa';
const DEVICE = 'dev-aaaaaaaaaaaaaaaaaaaa';
const T0 = Date.UTC(2025, 0, 1);

const point = (i: number, extra: Partial<DataPoint> = {}): DataPoint => ({
  workspace_id: WORKSPACE,
  fleet_id: FLEET,
  device_id: DEVICE,
  tag: 'temp',
  timestamp_device: new Date(T0 + i).toISOString(),
  timestamp_in: new Date(T0 + i + 500).toISOString(),
  payload: { v: i },
  ...extra,
});

/** A record as sent: the workspace, measure name, type and time unit are the call's common attributes. */
const recordOf = (i: number, { time = `${T0 + i}000`, origin = '0', payload = { v: i } as unknown } = {}) => ({
  Dimensions: [
    { Name: 'device_id', Value: DEVICE },
    { Name: 'tag', Value: 'temp' },
  ],
  MeasureValues: [
    { Name: 'fleet_id', Value: FLEET, Type: 'VARCHAR' },
    { Name: 'payload', Value: JSON.stringify(payload), Type: 'VARCHAR' },
    { Name: 'timestamp_in', Value: String(T0 + i + 500), Type: 'BIGINT' },
    { Name: 'origin', Value: origin, Type: 'VARCHAR' },
  ],
  Time: time,
});

const common = (workspace = WORKSPACE) => ({
  Dimensions: [{ Name: 'workspace_id', Value: workspace }],
  MeasureName: 'point',
  MeasureValueType: 'MULTI',
  TimeUnit: 'MICROSECONDS',
});

/** A cloud-stamped point: `us` microseconds into millisecond `i`, from `origin`. */
const stamped = (i: number, us: number, origin: string, extra: Partial<DataPoint> = {}) =>
  point(i, { timestamp_device: `${new Date(T0 + i).toISOString().slice(0, -1)}${String(us).padStart(3, '0')}Z`, origin, ...extra } as Partial<DataPoint>);

const rejected = (records: Array<{ RecordIndex: number; Reason: string; ExistingVersion?: number }>) =>
  new RejectedRecordsException({
    message: 'One or more records have been rejected. See RejectedRecords for details.',
    $metadata: {},
    RejectedRecords: records,
  });

// Reasons as Timestream words them.
const SAME_KEY =
  'A record already exists with the same time, dimensions, measure name, and record version. A higher record version must be specified in order to update the measure value.';
const LOWER_VERSION = 'The record version 1 is lower than the existing version 1. A higher version is required to update the measure value.';
const OUT_OF_RANGE = 'The record timestamp is outside the time range [2025-01-01T00:00:00Z, 2025-01-01T06:00:00Z) of the data ingestion window.';

const setup = () => {
  const writeClient = new TimestreamWriteClient({ region: 'us-east-1' });
  const queryClient = new TimestreamQueryClient({ region: 'us-east-1' });
  const writes = mockClient(writeClient);
  const queries = mockClient(queryClient);
  const store = timestreamStore({ database: 'fleetstream', table: 'datapoints', writeClient, queryClient });
  return { writes, queries, store };
};

describe('timestream store: writes', () => {
  it('sends WriteRecords of at most 100 MULTI records, exactly as the points say, what they share said once', async () => {
    const { writes, store } = setup();
    writes.on(WriteRecordsCommand).resolves({ RecordsIngested: { Total: 100 } });

    const result = await store.write(Array.from({ length: 250 }, (_, i) => point(i)));

    const calls = writes.commandCalls(WriteRecordsCommand).map((c) => c.args[0].input);
    expect(calls.map((c) => c.Records?.length)).toEqual([100, 100, 50]);
    expect(calls.every((c) => c.DatabaseName === 'fleetstream' && c.TableName === 'datapoints')).toBe(true);
    expect(calls.map((c) => c.CommonAttributes)).toEqual([common(), common(), common()]);
    expect(calls[0].Records?.[0]).toEqual(recordOf(0));
    expect(calls[2].Records?.[49]).toEqual(recordOf(249));
    expect(result).toEqual({ written: 250, discarded: 0 });
  });

  it('writes each workspace in calls of its own, its ID in the common attributes', async () => {
    const { writes, store } = setup();
    writes.on(WriteRecordsCommand).resolves({});
    const other = 'wks-bbbbbbbbbbbbbbbbbbbb';

    await store.write([point(0), point(1, { workspace_id: other }), point(2), point(3, { workspace_id: other })]);

    const calls = writes.commandCalls(WriteRecordsCommand).map((c) => c.args[0].input);
    expect(calls.map((c) => [c.CommonAttributes?.Dimensions?.[0].Value, c.Records?.map((r) => r.Time)])).toEqual([
      [WORKSPACE, [`${T0}000`, `${T0 + 2}000`]],
      [other, [`${T0 + 1}000`, `${T0 + 3}000`]],
    ]);
  });

  it('writes a cloud stamp to the microsecond with its origin, and keeps apart two origins under one stamp', async () => {
    const { writes, store } = setup();
    writes.on(WriteRecordsCommand).resolves({});

    const result = await store.write([stamped(5, 1, 'aaaaaaaaaaaaaaaa'), stamped(5, 1, 'bbbbbbbbbbbbbbbb'), stamped(5, 2, 'aaaaaaaaaaaaaaaa')]);

    // The third is the first one again, stamped anew by a retry: the same origin in the same millisecond.
    expect(writes.commandCalls(WriteRecordsCommand)[0].args[0].input.Records).toEqual([
      recordOf(5, { time: `${T0 + 5}001`, origin: 'aaaaaaaaaaaaaaaa' }),
      recordOf(5, { time: `${T0 + 5}001`, origin: 'bbbbbbbbbbbbbbbb' }),
    ]);
    expect(result).toEqual({ written: 2, discarded: 1 });
  });

  it('moves a cloud stamp that another point holds to the next free microsecond, never a whole millisecond, and stores it', async () => {
    const { writes, store } = setup();
    writes
      .on(WriteRecordsCommand)
      // Both points find their stamps taken; the second also the next one.
      .rejectsOnce(
        rejected([
          { RecordIndex: 0, Reason: SAME_KEY },
          { RecordIndex: 1, Reason: SAME_KEY },
        ]),
      )
      .rejectsOnce(rejected([{ RecordIndex: 1, Reason: SAME_KEY }]))
      .resolvesOnce({});

    const result = await store.write([stamped(5, 7, 'aaaaaaaaaaaaaaaa'), stamped(9, 999, 'bbbbbbbbbbbbbbbb')]);

    const times = writes.commandCalls(WriteRecordsCommand).map((c) => c.args[0].input.Records?.map((r) => r.Time));
    expect(times).toEqual([[`${T0 + 5}007`, `${T0 + 9}999`], [`${T0 + 5}008`, `${T0 + 10}001`], [`${T0 + 10}002`]]);
    expect(result).toEqual({ written: 2, discarded: 0 });
  });

  it('fails the write when a cloud stamp finds no free microsecond, so that the message is retried', async () => {
    const { writes, store } = setup();
    writes.on(WriteRecordsCommand).rejects(rejected([{ RecordIndex: 0, Reason: SAME_KEY }]));

    await expect(store.write([stamped(5, 7, 'aaaaaaaaaaaaaaaa')])).rejects.toThrow(/no free microsecond/);
    expect(writes.commandCalls(WriteRecordsCommand).length).toBeGreaterThan(100);
  });

  it('refuses a cloud stamp without its origin before writing anything', async () => {
    const { writes, store } = setup();

    await expect(store.write([point(0), point(1, { timestamp_device: '2025-01-01T00:00:00.001500Z' })])).rejects.toMatchObject({
      details: [{ field: 'points[1].origin' }],
    });
    expect(writes.commandCalls(WriteRecordsCommand)).toHaveLength(0);
  });

  it('meters a batch of small points at a fraction of a write each', async () => {
    const { writes, store } = setup();
    writes.on(WriteRecordsCommand).resolves({});

    await store.write(Array.from({ length: 100 }, (_, i) => point(i)));

    const input = writes.commandCalls(WriteRecordsCommand)[0].args[0].input;
    const bytes = (input.Records ?? []).reduce((sum, r) => sum + recordBytes(r), 0) + recordBytes({ ...input.CommonAttributes, Time: '' });
    // 100 points of about 120 bytes: 12 writes of 1 KiB. With the workspace and measure name in
    // every record it would be 16; metered one record at a time, 100.
    expect(Math.ceil(bytes / 1024)).toBeLessThanOrEqual(12);
  });

  it('sends a point once when a write holds it twice, and counts the second as discarded', async () => {
    const { writes, store } = setup();
    writes.on(WriteRecordsCommand).resolves({});

    const result = await store.write([point(1), point(2), point(1, { payload: 'later' })]);

    expect(writes.commandCalls(WriteRecordsCommand)[0].args[0].input.Records).toEqual([recordOf(1), recordOf(2)]);
    expect(result).toEqual({ written: 2, discarded: 1 });
  });

  it('counts records rejected as already stored as discarded, whichever way Timestream words it', async () => {
    const { writes, store } = setup();
    writes
      .on(WriteRecordsCommand)
      .rejectsOnce(
        rejected([
          { RecordIndex: 3, Reason: SAME_KEY },
          { RecordIndex: 40, Reason: LOWER_VERSION, ExistingVersion: 1 },
        ]),
      )
      .resolvesOnce({})
      .rejectsOnce(rejected([{ RecordIndex: 0, Reason: 'Duplicate', ExistingVersion: 1 }]));

    const result = await store.write(Array.from({ length: 201 }, (_, i) => point(i)));

    expect(writes.commandCalls(WriteRecordsCommand)).toHaveLength(3);
    expect(result).toEqual({ written: 198, discarded: 3 });
  });

  it('fails the write when a record is rejected for another reason, after sending every batch', async () => {
    const { writes, store } = setup();
    writes
      .on(WriteRecordsCommand)
      .rejectsOnce(
        rejected([
          { RecordIndex: 1, Reason: SAME_KEY },
          { RecordIndex: 7, Reason: OUT_OF_RANGE },
        ]),
      )
      .resolvesOnce({});

    const failure = store.write(Array.from({ length: 150 }, (_, i) => point(i)));

    await expect(failure).rejects.toThrow(RejectedPointsError);
    await expect(failure).rejects.toThrow(OUT_OF_RANGE);
    await expect(failure).rejects.toMatchObject({ rejected: [{ RecordIndex: 7, Reason: OUT_OF_RANGE }] });
    expect(writes.commandCalls(WriteRecordsCommand)).toHaveLength(2);
  });

  it('fails the write with the throttling error once the client gives up, sending nothing after it', async () => {
    const { writes, store } = setup();
    writes
      .on(WriteRecordsCommand)
      .resolvesOnce({})
      .rejectsOnce(new ThrottlingException({ message: 'Rate exceeded', Message: 'Rate exceeded', $metadata: {} }));

    await expect(store.write(Array.from({ length: 300 }, (_, i) => point(i)))).rejects.toThrow(ThrottlingException);

    expect(writes.commandCalls(WriteRecordsCommand)).toHaveLength(2);
  });

  it('rejects a point whose record passes 2 KB before writing anything, and takes one of exactly 2 KB', async () => {
    const { writes, store } = setup();
    writes.on(WriteRecordsCommand).resolves({});
    // The record's names and values other than the payload's value, plus 8 bytes of time.
    const base =
      Buffer.byteLength(
        ['workspace_id', WORKSPACE, 'device_id', DEVICE, 'tag', 'temp', 'point', 'fleet_id', FLEET, 'payload', 'timestamp_in', 'origin', '0'].join(''),
      ) +
      8 +
      8; // the time, and timestamp_in as a BIGINT
    const exact = 'x'.repeat(2048 - base - 2); // JSON adds the two quotes

    await expect(store.write([point(0), point(1, { payload: `${exact}y` })])).rejects.toThrow(PayloadTooLargeError);
    expect(writes.commandCalls(WriteRecordsCommand)).toHaveLength(0);
    await expect(store.write([point(0, { payload: exact })])).resolves.toEqual({ written: 1, discarded: 0 });
  });

  it('writes the largest payload the device API takes, emoji and U+FFFF included, as its JSON text within one record', async () => {
    const { writes, store } = setup();
    writes.on(WriteRecordsCommand).resolves({});
    // DATA_PAYLOAD_MAX_BYTES of UTF-8, mostly 4-byte characters, with the longest tag.
    const unpadded = { '': '\uFFFE\uFFFF', n: 1e300, m: 1e-200, s: '😀'.repeat(360), pad: '' };
    const payload = { ...unpadded, pad: 'x'.repeat(DATA_PAYLOAD_MAX_BYTES - Buffer.byteLength(JSON.stringify(unpadded))) };
    const tag = 't'.repeat(64);

    const result = await store.write([point(0, { payload, tag })]);

    expect(Buffer.byteLength(JSON.stringify(payload))).toBe(DATA_PAYLOAD_MAX_BYTES);
    expect(result).toEqual({ written: 1, discarded: 0 });
    const measures = writes.commandCalls(WriteRecordsCommand)[0].args[0].input.Records?.[0].MeasureValues;
    expect(measures?.find((m) => m.Name === 'payload')?.Value).toBe(JSON.stringify(payload));
  });

  it('rejects invalid points before writing anything, naming each bad field', async () => {
    const { writes, store } = setup();

    const failure = store.write([point(0), point(1, { tag: "x' OR '1'='1" }), point(2, { timestamp_device: 'soon' })]);

    await expect(failure).rejects.toThrow(ValidationError);
    await expect(failure).rejects.toMatchObject({ details: [{ field: 'points[1].tag' }, { field: 'points[2].timestamp_device' }] });
    expect(writes.commandCalls(WriteRecordsCommand)).toHaveLength(0);
  });
});

describe('timestream store: SQL', () => {
  const base: TimeseriesQuery = { workspaceId: WORKSPACE, from: 0, size: 100, order: 'desc' };
  const FROM = 'FROM "fleetstream"."datapoints"';

  // Each origin's copies in a millisecond numbered, the earliest first: a retry's second stamp is never read.
  const COPIES =
    'SELECT device_id, tag, fleet_id, payload, timestamp_in, time, ' +
    'row_number() OVER (PARTITION BY device_id, tag, origin, bin(time, 1ms) ORDER BY time) AS copy ' +
    `${FROM} WHERE measure_name = 'point' AND workspace_id = '${WORKSPACE}'`;

  it('reads a first page with ORDER BY … LIMIT, newest first, one copy of each point', () => {
    expect(buildQuerySql('fleetstream', 'datapoints', base)).toBe(
      'SELECT device_id, tag, fleet_id, payload, timestamp_in, to_nanoseconds(time) AS time_ns ' +
        `FROM (${COPIES}) WHERE copy = 1 ` +
        'ORDER BY time DESC, device_id DESC, tag DESC LIMIT 100',
    );
  });

  it('numbers the rows with row_number() for a later page: no OFFSET', () => {
    const sql = buildQuerySql('fleetstream', 'datapoints', { ...base, from: 3, size: 25, order: 'asc' });

    expect(sql).toBe(
      'SELECT device_id, tag, fleet_id, payload, timestamp_in, to_nanoseconds(time) AS time_ns FROM (' +
        'SELECT device_id, tag, fleet_id, payload, timestamp_in, time, ' +
        'row_number() OVER (ORDER BY time ASC, device_id ASC, tag ASC) AS rn ' +
        `FROM (${COPIES}) WHERE copy = 1` +
        ') WHERE rn > 75 AND rn <= 100 ORDER BY rn',
    );
    expect(sql).not.toMatch(/OFFSET/i);
  });

  it('applies every filter: the time range to the microsecond, devices and tags', () => {
    const sql = buildQuerySql('fleetstream', 'datapoints', {
      ...base,
      start: '2025-01-01T00:00:00.000Z',
      end: '2025-01-02T00:00:00.000250Z',
      devices: [DEVICE, 'dev-bbbbbbbbbbbbbbbbbbbb'],
      tags: ['temp', 'hum.idity'],
    });

    expect(sql).toContain(
      `WHERE measure_name = 'point' AND workspace_id = '${WORKSPACE}' ` +
        `AND time >= from_nanoseconds(${T0}000000) AND time < from_nanoseconds(${T0 + 86_400_000}250000) ` +
        `AND device_id IN ('${DEVICE}', 'dev-bbbbbbbbbbbbbbbbbbbb') AND tag IN ('temp', 'hum.idity')) WHERE copy = 1 ORDER BY`,
    );
  });

  it('filters by fleet_id, the fleet each point was stored with', () => {
    const sql = buildQuerySql('fleetstream', 'datapoints', { ...base, fleets: [FLEET, 'flt-bbbbbbbbbbbbbbbbbbbb'] });

    expect(sql).toContain(`AND fleet_id IN ('${FLEET}', 'flt-bbbbbbbbbbbbbbbbbbbb')) WHERE copy = 1 ORDER BY`);
    expect(() => buildQuerySql('fleetstream', 'datapoints', { ...base, fleets: ["flt' OR 1=1"] })).toThrow(ValidationError);
  });

  it('reads a range oldest first, one copy of each point, unpaged', () => {
    expect(buildRangeSql('fleetstream', 'datapoints', { workspaceId: WORKSPACE, start: '2025-01-01T00:00:00.000Z', tags: ['temp'] })).toBe(
      'SELECT device_id, tag, fleet_id, payload, timestamp_in, to_nanoseconds(time) AS time_ns ' +
        `FROM (${COPIES} AND time >= from_nanoseconds(${T0}000000) AND tag IN ('temp')) WHERE copy = 1 ` +
        'ORDER BY time ASC, device_id ASC, tag ASC',
    );
  });

  it('quotes the database and table names and refuses any value it cannot prove safe', () => {
    expect(buildQuerySql('my "db"', 'tab', base)).toContain('FROM "my ""db"""."tab"');
    for (const bad of [{ devices: ["dev-a' OR '1'='1"] }, { tags: ['a;DROP'] }, { workspaceId: "wks'" }, { start: 'not a date' }]) {
      expect(() => buildQuerySql('fleetstream', 'datapoints', { ...base, ...bad })).toThrow(ValidationError);
    }
  });
});

describe('timestream store: query results', () => {
  const columns = ['device_id', 'tag', 'fleet_id', 'payload', 'timestamp_in', 'time_ns'].map((Name) => ({ Name, Type: { ScalarType: 'VARCHAR' } }));
  const row = (i: number, nanos = `${T0 + i}000000`) => ({
    Data: [DEVICE, 'temp', FLEET, JSON.stringify({ v: i }), String(T0 + i + 500), nanos].map((ScalarValue) => ({ ScalarValue })),
  });
  const page = (rows: number[], NextToken?: string): QueryCommandOutput => ({
    QueryId: 'q-1',
    ColumnInfo: columns as never,
    Rows: rows.map((i) => row(i)),
    NextToken,
    $metadata: {},
  });
  const collect = async (points: AsyncIterable<DataPoint>) => {
    const all: DataPoint[] = [];
    for await (const p of points) all.push(p);
    return all;
  };

  it('reads every page across NextToken, an empty one included, with the same SQL', async () => {
    const { queries, store } = setup();
    queries
      .on(QueryCommand)
      .resolvesOnce(page([0, 1], 'n1'))
      .resolvesOnce(page([], 'n2'))
      .resolvesOnce(page([2]));

    const points = await collect(store.query({ workspaceId: WORKSPACE, from: 0, size: 3, order: 'asc' }));

    expect(points).toEqual([0, 1, 2].map((i) => point(i)));
    const inputs = queries.commandCalls(QueryCommand).map((c) => c.args[0].input);
    expect(inputs.map((i) => i.NextToken)).toEqual([undefined, 'n1', 'n2']);
    expect(new Set(inputs.map((i) => i.QueryString)).size).toBe(1);
    expect(inputs.every((i) => i.MaxRows === 1000)).toBe(true);
    expect(queries.commandCalls(CancelQueryCommand)).toHaveLength(0);
  });

  it('reads back a payload with emoji, U+FFFE/U+FFFF, an empty key and extreme doubles exactly', async () => {
    const { queries, store } = setup();
    const payload = { '': '😀\uFFFE\uFFFF', n: 1e300, m: 1e-200, deep: [[[{ a: [] }]]] };
    const awkward = { ...row(0), Data: row(0).Data.map((d, i) => (i === 3 ? { ScalarValue: JSON.stringify(payload) } : d)) };
    queries.on(QueryCommand).resolves({ ...page([]), Rows: [awkward] });

    const points = await collect(store.query({ workspaceId: WORKSPACE, from: 0, size: 1, order: 'asc' }));

    expect(points).toEqual([point(0, { payload })]);
  });

  it('prints a cloud stamp with its microseconds and a device time with milliseconds, as written', async () => {
    const { queries, store } = setup();
    queries.on(QueryCommand).resolves({ ...page([]), Rows: [row(1, `${T0 + 1}042000`), row(2)] });

    const points = await collect(store.query({ workspaceId: WORKSPACE, from: 0, size: 2, order: 'asc' }));

    expect(points.map((p) => p.timestamp_device)).toEqual(['2025-01-01T00:00:00.001042Z', '2025-01-01T00:00:00.002Z']);
  });

  it('cancels the query when the reader stops before the last page', async () => {
    const { queries, store } = setup();
    queries.on(QueryCommand).resolves(page([0, 1], 'more'));
    queries.on(CancelQueryCommand).resolves({});

    for await (const p of store.query({ workspaceId: WORKSPACE, from: 0, size: 100, order: 'asc' })) {
      expect(p).toEqual(point(0));
      break;
    }

    expect(queries.commandCalls(CancelQueryCommand).map((c) => c.args[0].input)).toEqual([{ QueryId: 'q-1' }]);
  });

  it('passes a throttling error on to the reader', async () => {
    const { queries, store } = setup();
    queries.on(QueryCommand).rejects(Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' }));

    await expect(collect(store.query({ workspaceId: WORKSPACE, from: 0, size: 10, order: 'desc' }))).rejects.toThrow('Rate exceeded');
  });

  it('reads a range in runs of a page each, its times as numbers, across NextToken', async () => {
    const { queries, store } = setup();
    queries
      .on(QueryCommand)
      .resolvesOnce(page([0, 1], 'n1'))
      .resolvesOnce(page([], 'n2'))
      .resolvesOnce({ ...page([]), Rows: [row(2, `${T0 + 2}042000`)] });

    const runs: RangePoint[][] = [];
    for await (const run of store.readRange({ workspaceId: WORKSPACE })) runs.push(run);

    const at = (i: number, us = 0): RangePoint => ({ device_id: DEVICE, fleet_id: FLEET, tag: 'temp', ms: T0 + i, us, inMs: T0 + i + 500, payload: { v: i } });
    expect(runs).toEqual([[at(0), at(1)], [at(2, 42)]]);
    const inputs = queries.commandCalls(QueryCommand).map((c) => c.args[0].input);
    expect(inputs.map((i) => i.QueryString)).toEqual(Array(3).fill(buildRangeSql('fleetstream', 'datapoints', { workspaceId: WORKSPACE })));
    expect(inputs.map((i) => i.NextToken)).toEqual([undefined, 'n1', 'n2']);
  });

  it('asks nothing for an empty page or an empty range', async () => {
    const { queries, store } = setup();

    await collect(store.query({ workspaceId: WORKSPACE, from: 0, size: 0, order: 'desc' }));
    await collect(store.query({ workspaceId: WORKSPACE, from: 0, size: 5, order: 'desc', start: '2025-01-02T00:00:00.000Z', end: '2025-01-01T00:00:00.000Z' }));

    expect(queries.commandCalls(QueryCommand)).toHaveLength(0);
  });
});
