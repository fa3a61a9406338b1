import { CancelQueryCommand, QueryCommand, TimestreamQueryClient, type ColumnInfo, type Row } from '@aws-sdk/client-timestream-query';
import { TimestreamWriteClient, WriteRecordsCommand, type _Record, type RejectedRecord } from '@aws-sdk/client-timestream-write';
import { PayloadTooLargeError, ValidationError, type ErrorDetail } from '../../shared/errors';
import type { DataPoint, PointToStore, TimeseriesQuery, TimeseriesStore, WriteResult } from './index';
import { KEY_PART } from './keys';

// Timestream for LiveAnalytics limits: https://docs.aws.amazon.com/timestream/latest/developerguide/ts-limits.html
/** Records per WriteRecords call. */
export const WRITE_RECORDS_MAX = 100;
/** Largest record: dimensions, measure names and values, and the time. */
export const RECORD_MAX_BYTES = 2048;
/** Rows per Query page (the API's maximum). */
const QUERY_PAGE_ROWS = 1000;

/** The name of the multi-measure record that holds a data point. */
export const MEASURE_NAME = 'point';

/**
 * A record was refused for another reason than an already stored point (a timestamp outside the
 * retention window, a limit): the batch must be retried, and after the queue's retries it is
 * kept in the DLQ.
 */
export class RejectedPointsError extends Error {
  constructor(readonly rejected: RejectedRecord[]) {
    super(`Timestream rejected ${rejected.length} record(s): ${[...new Set(rejected.map((r) => r.Reason))].join(' | ')}`);
    this.name = 'RejectedPointsError';
  }
}

// A same-key record is refused with its ExistingVersion, or with a reason saying the record
// already exists or has a lower version (the exact wording is not part of the API).
const isDuplicate = (rejected: RejectedRecord) =>
  rejected.ExistingVersion !== undefined || /already exists|existing version/i.test(rejected.Reason ?? '');

const recordBytes = (record: _Record) =>
  [
    ...(record.Dimensions ?? []).flatMap((d) => [d.Name, d.Value]),
    record.MeasureName,
    ...(record.MeasureValues ?? []).flatMap((m) => [m.Name, m.Value]),
  ].reduce((sum, text) => sum + Buffer.byteLength(text ?? ''), 8);

const epochMs = (value: unknown): number | undefined => {
  const ms = typeof value === 'string' ? Date.parse(value) : NaN;
  return Number.isNaN(ms) || ms < 0 ? undefined : ms;
};

/** A data point as a Timestream record: dimensions workspace, device, tag; one MULTI measure. */
const toRecord = (point: DataPoint, timeMs: number, inMs: number): _Record => ({
  Dimensions: [
    { Name: 'workspace_id', Value: point.workspace_id },
    { Name: 'device_id', Value: point.device_id },
    { Name: 'tag', Value: point.tag },
  ],
  MeasureName: MEASURE_NAME,
  MeasureValueType: 'MULTI',
  MeasureValues: [
    { Name: 'fleet_id', Value: point.fleet_id, Type: 'VARCHAR' },
    { Name: 'payload', Value: JSON.stringify(point.payload), Type: 'VARCHAR' },
    // Milliseconds since the epoch, as the record's time.
    { Name: 'timestamp_in', Value: String(inMs), Type: 'BIGINT' },
  ],
  Time: String(timeMs),
  TimeUnit: 'MILLISECONDS',
});

/**
 * The records of a write, one per distinct (device, tag, timestamp_device), checked all at once so
 * that a bad point writes nothing.
 * @throws ValidationError naming each bad field; PayloadTooLargeError when a record passes 2 KB.
 */
const toRecords = (points: DataPoint[]): { records: _Record[]; duplicates: number } => {
  const details: ErrorDetail[] = [];
  const oversize: ErrorDetail[] = [];
  const seen = new Set<string>();
  const records: _Record[] = [];
  points.forEach((point, i) => {
    const bad = (field: string, message: string) => details.push({ field: `points[${i}].${field}`, message });
    for (const field of ['workspace_id', 'fleet_id', 'device_id', 'tag'] as const) {
      if (typeof point[field] !== 'string' || !KEY_PART.test(point[field])) bad(field, 'Must be 1 to 128 letters, digits, "_", "." or "-".');
    }
    const timeMs = epochMs(point.timestamp_device);
    const inMs = epochMs(point.timestamp_in);
    if (timeMs === undefined) bad('timestamp_device', 'Must be an RFC 3339 date after 1970.');
    if (inMs === undefined) bad('timestamp_in', 'Must be an RFC 3339 date after 1970.');
    if (JSON.stringify(point.payload) === undefined) bad('payload', 'Must be a JSON value.');
    if (timeMs === undefined || inMs === undefined || JSON.stringify(point.payload) === undefined) return;
    const record = toRecord(point, timeMs, inMs);
    if (recordBytes(record) > RECORD_MAX_BYTES) {
      oversize.push({ field: `points[${i}].payload`, message: `The record is ${recordBytes(record)} bytes; Timestream takes at most ${RECORD_MAX_BYTES}.` });
    }
    const key = `${point.workspace_id}\n${point.device_id}\n${point.tag}\n${timeMs}`;
    if (seen.has(key)) return;
    seen.add(key);
    records.push(record);
  });
  if (details.length) throw new ValidationError(`Invalid data points: ${details.map((d) => d.field).join(', ')}.`, { details });
  if (oversize.length) throw new PayloadTooLargeError('Data points too large for a Timestream record (2 KB).', { details: oversize });
  return { records, duplicates: points.length - records.length };
};

/** An identifier in double quotes (database and table names are the deployer's, quoted all the same). */
const identifier = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** A string literal. Values are checked against KEY_PART before they get here; quotes are doubled regardless. */
const literal = (value: string) => {
  if (!KEY_PART.test(value)) throw new ValidationError(`Invalid filter value ${JSON.stringify(value)}.`);
  return `'${value.replaceAll("'", "''")}'`;
};

const timeLiteral = (value: string, field: 'start' | 'end') => {
  const ms = Date.parse(value);
  if (!Number.isSafeInteger(ms)) throw new ValidationError(`Invalid ${field} ${JSON.stringify(value)}.`);
  return `from_milliseconds(${ms})`;
};

/**
 * The SQL of a query. Timestream has no OFFSET and no bind parameters: the first page is an
 * ORDER BY … LIMIT, a later one numbers the rows with row_number() and keeps its range; every
 * value is checked and quoted here. The order is (time, device_id, tag), all descending for
 * `desc`, as the other backend.
 */
export const buildQuerySql = (database: string, table: string, query: TimeseriesQuery): string => {
  const skip = query.from * query.size;
  if (!Number.isSafeInteger(skip) || !Number.isSafeInteger(query.size) || skip < 0 || query.size < 1) {
    throw new ValidationError('Invalid page: from and size must be non-negative integers, size at least 1.');
  }
  const where = [`measure_name = '${MEASURE_NAME}'`, `workspace_id = ${literal(query.workspaceId)}`];
  if (query.start !== undefined) where.push(`time >= ${timeLiteral(query.start, 'start')}`);
  if (query.end !== undefined) where.push(`time < ${timeLiteral(query.end, 'end')}`);
  if (query.devices?.length) where.push(`device_id IN (${query.devices.map(literal).join(', ')})`);
  if (query.tags?.length) where.push(`tag IN (${query.tags.map(literal).join(', ')})`);
  const direction = query.order === 'asc' ? 'ASC' : 'DESC';
  const order = `time ${direction}, device_id ${direction}, tag ${direction}`;
  const columns = 'device_id, tag, fleet_id, payload, timestamp_in, to_milliseconds(time) AS time_ms';
  const from = `FROM ${identifier(database)}.${identifier(table)} WHERE ${where.join(' AND ')}`;
  if (skip === 0) return `SELECT ${columns} ${from} ORDER BY ${order} LIMIT ${query.size}`;
  return (
    `SELECT device_id, tag, fleet_id, payload, timestamp_in, time_ms FROM (` +
    `SELECT ${columns}, row_number() OVER (ORDER BY ${order}) AS rn ${from}` +
    `) WHERE rn > ${skip} AND rn <= ${skip + query.size} ORDER BY rn`
  );
};

const toPoint = (workspaceId: string, columns: ColumnInfo[], row: Row): DataPoint => {
  const value = (name: string) => row.Data?.[columns.findIndex((c) => c.Name === name)]?.ScalarValue;
  return {
    workspace_id: workspaceId,
    fleet_id: value('fleet_id') ?? '',
    device_id: value('device_id') ?? '',
    tag: value('tag') ?? '',
    timestamp_device: new Date(Number(value('time_ms'))).toISOString(),
    timestamp_in: new Date(Number(value('timestamp_in'))).toISOString(),
    payload: JSON.parse(value('payload') ?? 'null'),
  };
};

export interface TimestreamStoreOptions {
  database: string;
  table: string;
  /** Clients to use instead of the default ones (endpoint discovery, region from the environment). */
  writeClient?: TimestreamWriteClient;
  queryClient?: TimestreamQueryClient;
}

/**
 * The `timestream` time-series backend (Amazon Timestream for LiveAnalytics, which AWS closed to
 * new customers on 2025-06-20). A point is a MULTI record: dimensions workspace_id, device_id,
 * tag; measures fleet_id, payload (JSON text) and timestamp_in (BIGINT ms); time =
 * timestamp_device in milliseconds.
 *
 * Writes go in WriteRecords calls of at most 100 records. A same-key record comes back as a
 * rejected record (its values differ; Timestream keeps the first): counted as discarded. Any
 * other rejection or error fails the write so that the caller retries; records accepted before
 * are then accepted again unchanged (an identical record is not rejected).
 */
export const timestreamStore = (options: TimestreamStoreOptions): TimeseriesStore => {
  // Created on first use, once per container: endpoint discovery runs on the first call.
  let writer = options.writeClient;
  let reader = options.queryClient;

  return {
    async write(points: PointToStore[]): Promise<WriteResult> {
      const { records, duplicates } = toRecords(points);
      writer ??= new TimestreamWriteClient({});
      let discarded = duplicates;
      const failures: RejectedRecord[] = [];
      for (let i = 0; i < records.length; i += WRITE_RECORDS_MAX) {
        try {
          await writer.send(
            new WriteRecordsCommand({ DatabaseName: options.database, TableName: options.table, Records: records.slice(i, i + WRITE_RECORDS_MAX) }),
          );
        } catch (error) {
          const rejected = (error as { name?: string; RejectedRecords?: RejectedRecord[] }).RejectedRecords;
          if ((error as Error).name !== 'RejectedRecordsException' || !rejected) throw error;
          for (const record of rejected) {
            if (isDuplicate(record)) discarded++;
            else failures.push({ ...record, RecordIndex: i + (record.RecordIndex ?? 0) });
          }
        }
      }
      if (failures.length) throw new RejectedPointsError(failures);
      return { written: points.length - discarded, discarded };
    },

    async *query(query: TimeseriesQuery): AsyncGenerator<DataPoint> {
      if (query.size <= 0 || (query.start !== undefined && query.end !== undefined && Date.parse(query.start) >= Date.parse(query.end))) return;
      const QueryString = buildQuerySql(options.database, options.table, query);
      reader ??= new TimestreamQueryClient({});
      let NextToken: string | undefined;
      let queryId: string | undefined;
      let finished = false;
      try {
        do {
          const page = await reader.send(new QueryCommand({ QueryString, NextToken, MaxRows: QUERY_PAGE_ROWS }));
          queryId = page.QueryId;
          NextToken = page.NextToken;
          const columns = page.ColumnInfo ?? [];
          for (const row of page.Rows ?? []) yield toPoint(query.workspaceId, columns, row);
        } while (NextToken);
        finished = true;
      } finally {
        // A reader that stops early (a client that hung up) frees the query's resources.
        if (!finished && NextToken && queryId) await reader.send(new CancelQueryCommand({ QueryId: queryId })).catch(() => undefined);
      }
    },
  };
};
