import { CancelQueryCommand, QueryCommand, TimestreamQueryClient, type QueryCommandOutput } from '@aws-sdk/client-timestream-query';
import { RejectedRecordsException, ThrottlingException, TimestreamWriteClient, WriteRecordsCommand } from '@aws-sdk/client-timestream-write';
import { mockClient } from 'aws-sdk-client-mock';
import { PayloadTooLargeError, ValidationError } from '../../../lambdas/shared/errors';
import type { DataPoint, TimeseriesQuery } from '../../../lambdas/stores/timeseries';
import { buildQuerySql, RejectedPointsError, timestreamStore } from '../../../lambdas/stores/timeseries/timestream';
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

const recordOf = (i: number) => ({
  Dimensions: [
    { Name: 'workspace_id', Value: WORKSPACE },
    { Name: 'device_id', Value: DEVICE },
    { Name: 'tag', Value: 'temp' },
  ],
  MeasureName: 'point',
  MeasureValueType: 'MULTI',
  MeasureValues: [
    { Name: 'fleet_id', Value: FLEET, Type: 'VARCHAR' },
    { Name: 'payload', Value: JSON.stringify({ v: i }), Type: 'VARCHAR' },
    { Name: 'timestamp_in', Value: String(T0 + i + 500), Type: 'BIGINT' },
  ],
  Time: String(T0 + i),
  TimeUnit: 'MILLISECONDS',
});

const rejected = (records: Array<{ RecordIndex: number; Reason: string; ExistingVersion?: number }>) =>
  new RejectedRecordsException({ message: 'One or more records have been rejected. See RejectedRecords for details.', $metadata: {}, RejectedRecords: records });

// Reasons as Timestream words them.
const SAME_KEY = 'A record already exists with the same time, dimensions, measure name, and record version. A higher record version must be specified in order to update the measure value.';
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
  it('sends WriteRecords of at most 100 MULTI records, exactly as the points say', async () => {
    const { writes, store } = setup();
    writes.on(WriteRecordsCommand).resolves({ RecordsIngested: { Total: 100 } });

    const result = await store.write(Array.from({ length: 250 }, (_, i) => point(i)));

    const calls = writes.commandCalls(WriteRecordsCommand).map((c) => c.args[0].input);
    expect(calls.map((c) => c.Records?.length)).toEqual([100, 100, 50]);
    expect(calls.every((c) => c.DatabaseName === 'fleetstream' && c.TableName === 'datapoints')).toBe(true);
    expect(calls[0].Records?.[0]).toEqual(recordOf(0));
    expect(calls[2].Records?.[49]).toEqual(recordOf(249));
    expect(result).toEqual({ written: 250, discarded: 0 });
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
      .rejectsOnce(rejected([{ RecordIndex: 3, Reason: SAME_KEY }, { RecordIndex: 40, Reason: LOWER_VERSION, ExistingVersion: 1 }]))
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
      .rejectsOnce(rejected([{ RecordIndex: 1, Reason: SAME_KEY }, { RecordIndex: 7, Reason: OUT_OF_RANGE }]))
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
    const base = Buffer.byteLength(
      ['workspace_id', WORKSPACE, 'device_id', DEVICE, 'tag', 'temp', 'point', 'fleet_id', FLEET, 'payload', 'timestamp_in', String(T0 + 500)].join(''),
    ) + 8;
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

  it('reads a first page with ORDER BY … LIMIT, newest first', () => {
    expect(buildQuerySql('fleetstream', 'datapoints', base)).toBe(
      'SELECT device_id, tag, fleet_id, payload, timestamp_in, to_milliseconds(time) AS time_ms ' +
        `${FROM} WHERE measure_name = 'point' AND workspace_id = '${WORKSPACE}' ` +
        'ORDER BY time DESC, device_id DESC, tag DESC LIMIT 100',
    );
  });

  it('numbers the rows with row_number() for a later page: no OFFSET', () => {
    const sql = buildQuerySql('fleetstream', 'datapoints', { ...base, from: 3, size: 25, order: 'asc' });

    expect(sql).toBe(
      'SELECT device_id, tag, fleet_id, payload, timestamp_in, time_ms FROM (' +
        'SELECT device_id, tag, fleet_id, payload, timestamp_in, to_milliseconds(time) AS time_ms, ' +
        'row_number() OVER (ORDER BY time ASC, device_id ASC, tag ASC) AS rn ' +
        `${FROM} WHERE measure_name = 'point' AND workspace_id = '${WORKSPACE}'` +
        ') WHERE rn > 75 AND rn <= 100 ORDER BY rn',
    );
    expect(sql).not.toMatch(/OFFSET/i);
  });

  it('applies every filter: the time range in milliseconds, devices and tags', () => {
    const sql = buildQuerySql('fleetstream', 'datapoints', {
      ...base,
      start: '2025-01-01T00:00:00.000Z',
      end: '2025-01-02T00:00:00.000Z',
      devices: [DEVICE, 'dev-bbbbbbbbbbbbbbbbbbbb'],
      tags: ['temp', 'hum.idity'],
    });

    expect(sql).toContain(
      `WHERE measure_name = 'point' AND workspace_id = '${WORKSPACE}' ` +
        `AND time >= from_milliseconds(${T0}) AND time < from_milliseconds(${T0 + 86_400_000}) ` +
        `AND device_id IN ('${DEVICE}', 'dev-bbbbbbbbbbbbbbbbbbbb') AND tag IN ('temp', 'hum.idity') ORDER BY`,
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
  const columns = ['device_id', 'tag', 'fleet_id', 'payload', 'timestamp_in', 'time_ms'].map((Name) => ({ Name, Type: { ScalarType: 'VARCHAR' } }));
  const row = (i: number) => ({
    Data: [DEVICE, 'temp', FLEET, JSON.stringify({ v: i }), String(T0 + i + 500), String(T0 + i)].map((ScalarValue) => ({ ScalarValue })),
  });
  const page = (rows: number[], NextToken?: string): QueryCommandOutput => ({
    QueryId: 'q-1',
    ColumnInfo: columns as never,
    Rows: rows.map(row),
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
    queries.on(QueryCommand).resolvesOnce(page([0, 1], 'n1')).resolvesOnce(page([], 'n2')).resolvesOnce(page([2]));

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

  it('asks nothing for an empty page or an empty range', async () => {
    const { queries, store } = setup();

    await collect(store.query({ workspaceId: WORKSPACE, from: 0, size: 0, order: 'desc' }));
    await collect(store.query({ workspaceId: WORKSPACE, from: 0, size: 5, order: 'desc', start: '2025-01-02T00:00:00.000Z', end: '2025-01-01T00:00:00.000Z' }));

    expect(queries.commandCalls(QueryCommand)).toHaveLength(0);
  });
});
