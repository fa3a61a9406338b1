import { CancelQueryCommand, QueryCommand, TimestreamQueryClient, type ColumnInfo, type Row } from '@aws-sdk/client-timestream-query';
import { TimestreamWriteClient, WriteRecordsCommand, type _Record, type RejectedRecord } from '@aws-sdk/client-timestream-write';
import { PayloadTooLargeError, ValidationError, type ErrorDetail } from '../../shared/errors';
import { addMicros, compareTime, formatTime, isCloudStamp, parseTime, type Time } from '../../shared/timestamps';
import type {
  BucketTotals,
  DataPoint,
  PointToStore,
  RangePoint,
  StoreAggregation,
  TimeseriesQuery,
  TimeseriesRange,
  TimeseriesStore,
  WriteResult,
} from './types';
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
const isDuplicate = (rejected: RejectedRecord) => rejected.ExistingVersion !== undefined || /already exists|existing version/i.test(rejected.Reason ?? '');

/** Bytes of a record as Timestream meters it: 8 for the time, names and values, 8 for a BIGINT. */
export const recordBytes = (record: _Record) =>
  [
    ...(record.Dimensions ?? []).flatMap((d) => [d.Name, d.Value]),
    record.MeasureName,
    ...(record.MeasureValues ?? []).flatMap((m) => [m.Name, m.Type === 'BIGINT' ? '12345678' : m.Value]),
  ].reduce((sum, text) => sum + Buffer.byteLength(text ?? ''), 8);

/** Most times a cloud stamp moves on when another point holds it (`write`). */
const RESTAMPS_MAX = 100;

/** A time as Timestream takes it: microseconds since the epoch, as digits (exact for any year). */
const microsText = ({ ms, us }: Time) => `${ms}${String(us).padStart(3, '0')}`;

/** A point to write: its record (without the workspace, which the batch's common attributes hold) and what decides its identity. */
interface Pending {
  index: number;
  workspaceId: string;
  time: Time;
  record: _Record;
}

/** The record of a point at `time`, the workspace left to the batch's common attributes. */
const recordAt = (pending: Omit<Pending, 'record'>, point: PointToStore, arrival: Time): _Record => ({
  Dimensions: [
    { Name: 'device_id', Value: point.device_id },
    { Name: 'tag', Value: point.tag },
  ],
  MeasureValues: [
    { Name: 'fleet_id', Value: point.fleet_id, Type: 'VARCHAR' },
    { Name: 'payload', Value: JSON.stringify(point.payload), Type: 'VARCHAR' },
    // Milliseconds since the epoch.
    { Name: 'timestamp_in', Value: String(arrival.ms), Type: 'BIGINT' },
    // Every record has one, so that queries can always name the column: a device's own time is
    // identified by the time itself ('0').
    { Name: 'origin', Value: isCloudStamp(pending.time) ? (point.origin ?? '') : '0', Type: 'VARCHAR' },
  ],
  Time: microsText(pending.time),
});

/**
 * The records of a write, one per identity (a device's own time: device, tag and time; a cloud
 * stamp: device, tag, millisecond and origin), checked all at once so that a bad point writes
 * nothing.
 * @throws ValidationError naming each bad field; PayloadTooLargeError when a record passes 2 KB.
 */
const toRecords = (points: PointToStore[]): { records: Pending[]; duplicates: number } => {
  const details: ErrorDetail[] = [];
  const oversize: ErrorDetail[] = [];
  const seen = new Set<string>();
  const records: Pending[] = [];
  points.forEach((point, index) => {
    const bad = (field: string, message: string) => details.push({ field: `points[${index}].${field}`, message });
    for (const field of ['workspace_id', 'fleet_id', 'device_id', 'tag'] as const) {
      if (typeof point[field] !== 'string' || !KEY_PART.test(point[field])) bad(field, 'Must be 1 to 128 letters, digits, "_", "." or "-".');
    }
    const time = typeof point.timestamp_device === 'string' ? parseTime(point.timestamp_device) : undefined;
    const arrival = typeof point.timestamp_in === 'string' ? parseTime(point.timestamp_in) : undefined;
    if (!time || time.ms < 0) bad('timestamp_device', 'Must be an RFC 3339 date after 1970.');
    if (!arrival || arrival.ms < 0) bad('timestamp_in', 'Must be an RFC 3339 date after 1970.');
    if (JSON.stringify(point.payload) === undefined) bad('payload', 'Must be a JSON value.');
    const cloud = time !== undefined && isCloudStamp(time);
    if (cloud && !/^[0-9a-f]{8,32}$/.test(point.origin ?? '')) bad('origin', 'A cloud-stamped point needs its origin: 8 to 32 hex digits.');
    if (!time || time.ms < 0 || !arrival || arrival.ms < 0 || JSON.stringify(point.payload) === undefined) return;
    const pending = { index, workspaceId: point.workspace_id, time };
    const record = recordAt(pending, point, arrival);
    const bytes = recordBytes(record) + Buffer.byteLength(`workspace_id${point.workspace_id}${MEASURE_NAME}`);
    if (bytes > RECORD_MAX_BYTES)
      oversize.push({ field: `points[${index}].payload`, message: `The record is ${bytes} bytes; Timestream takes at most ${RECORD_MAX_BYTES}.` });
    const key = cloud
      ? `${point.workspace_id}\n${point.device_id}\n${point.tag}\n${time.ms}\n${point.origin}`
      : `${point.workspace_id}\n${point.device_id}\n${point.tag}\n${microsText(time)}`;
    if (seen.has(key)) return;
    seen.add(key);
    records.push({ ...pending, record });
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
  const time = parseTime(value, true);
  if (!time || time.ms < 0) throw new ValidationError(`Invalid ${field} ${JSON.stringify(value)}.`);
  return `from_nanoseconds(${microsText(time)}000)`;
};

/** The table, quoted. */
const tableOf = (database: string, table: string) => `${identifier(database)}.${identifier(table)}`;

/** The conditions that select a range's points: every value checked and quoted. */
const whereOf = (range: TimeseriesRange): string[] => {
  const where = [`measure_name = '${MEASURE_NAME}'`, `workspace_id = ${literal(range.workspaceId)}`];
  if (range.start !== undefined) where.push(`time >= ${timeLiteral(range.start, 'start')}`);
  if (range.end !== undefined) where.push(`time < ${timeLiteral(range.end, 'end')}`);
  if (range.devices?.length) where.push(`device_id IN (${range.devices.map(literal).join(', ')})`);
  if (range.tags?.length) where.push(`tag IN (${range.tags.map(literal).join(', ')})`);
  if (range.fleets?.length) where.push(`fleet_id IN (${range.fleets.map(literal).join(', ')})`);
  return where;
};

const COLUMNS = 'device_id, tag, fleet_id, payload, timestamp_in, time';
const OUTPUT = 'device_id, tag, fleet_id, payload, timestamp_in, to_nanoseconds(time) AS time_ns';

/**
 * The range's points, each copy numbered: a cloud-stamped point stored twice (a retry that stamped
 * it anew, within its millisecond) has copies 1 and 2, the earliest stamp first; every other point
 * is copy 1. Readers keep copy 1.
 */
const copiesOf = (database: string, table: string, range: TimeseriesRange) =>
  `SELECT ${COLUMNS}, row_number() OVER (PARTITION BY device_id, tag, origin, bin(time, 1ms) ORDER BY time) AS copy ` +
  `FROM ${tableOf(database, table)} WHERE ${whereOf(range).join(' AND ')}`;

/**
 * The SQL of a query. Timestream has no OFFSET and no bind parameters: the first page is an
 * ORDER BY … LIMIT, a later one numbers the rows with row_number() and keeps its range; every
 * value is checked and quoted here. The order is (time, device_id, tag), all descending for
 * `desc`, as the other backend. A cloud-stamped point stored twice is returned once, at its
 * earliest stamp ({@link copiesOf}).
 */
export const buildQuerySql = (database: string, table: string, query: TimeseriesQuery): string => {
  const skip = query.from * query.size;
  if (!Number.isSafeInteger(skip) || !Number.isSafeInteger(query.size) || skip < 0 || query.size < 1) {
    throw new ValidationError('Invalid page: from and size must be non-negative integers, size at least 1.');
  }
  const direction = query.order === 'asc' ? 'ASC' : 'DESC';
  const order = `time ${direction}, device_id ${direction}, tag ${direction}`;
  const copies = copiesOf(database, table, query);
  if (skip === 0) return `SELECT ${OUTPUT} FROM (${copies}) WHERE copy = 1 ORDER BY ${order} LIMIT ${query.size}`;
  return (
    `SELECT ${OUTPUT} FROM (` +
    `SELECT ${COLUMNS}, row_number() OVER (ORDER BY ${order}) AS rn FROM (${copies}) WHERE copy = 1` +
    `) WHERE rn > ${skip} AND rn <= ${skip + query.size} ORDER BY rn`
  );
};

/** The SQL of a range read: every point of the range once, oldest first (ties by device_id, then tag), unpaged. */
export const buildRangeSql = (database: string, table: string, range: TimeseriesRange): string =>
  `SELECT ${OUTPUT} FROM (${copiesOf(database, table, range)}) WHERE copy = 1 ORDER BY time ASC, device_id ASC, tag ASC`;

/** An interval literal of Timestream's query language (`15m`, `2h`, `7d`). */
const intervalLiteral = (amount: number, unit: string) => {
  if (!Number.isSafeInteger(amount) || amount < 0 || !/^[mhd]$/.test(unit)) throw new ValidationError(`Invalid interval ${amount}${unit}.`);
  return `${amount}${unit}`;
};

/**
 * The SQL of an aggregation of the payload itself, per bucket (and device): `bin()` of the time
 * shifted by the zone's constant offset, so that buckets start where its wall clock shows a
 * multiple of `every` (Timestream's times are UTC, and its language has no time zones). A payload
 * is JSON text: try_cast reads a JSON number as a DOUBLE and gives null for anything else (a
 * string keeps its quotes), which count(v) leaves out. Each point once ({@link copiesOf}).
 */
export const buildAggregateSql = (database: string, table: string, { range, every, offsetMinutes, groupByDevice }: StoreAggregation): string => {
  const shift = offsetMinutes === 0 ? '' : ` ${offsetMinutes > 0 ? '+' : '-'} ${intervalLiteral(Math.abs(offsetMinutes), 'm')}`;
  const unshift = offsetMinutes === 0 ? '' : ` ${offsetMinutes > 0 ? '-' : '+'} ${intervalLiteral(Math.abs(offsetMinutes), 'm')}`;
  const bucket = `bin(time${shift}, ${intervalLiteral(every.amount, every.unit)})${unshift}`;
  const keys = groupByDevice ? `${bucket}, device_id` : bucket;
  return (
    `SELECT to_milliseconds(${bucket}) AS bucket_ms${groupByDevice ? ', device_id' : ''}, ` +
    'count(*) AS points, count(v) AS numbers, sum(v) AS total, min(v) AS low, max(v) AS high ' +
    `FROM (SELECT time, device_id, try_cast(payload AS DOUBLE) AS v FROM (${copiesOf(database, table, range)}) WHERE copy = 1) ` +
    `GROUP BY ${keys} ORDER BY ${groupByDevice ? 'bucket_ms, device_id' : 'bucket_ms'}`
  );
};

const toTotals = (value: (row: Row, name: string) => string | undefined, row: Row): BucketTotals => {
  const device = value(row, 'device_id');
  const count = Number(value(row, 'numbers') ?? 0);
  return {
    start: Number(value(row, 'bucket_ms')),
    ...(device === undefined ? {} : { device_id: device }),
    count,
    sum: count ? Number(value(row, 'total')) : 0,
    min: count ? Number(value(row, 'low')) : Infinity,
    max: count ? Number(value(row, 'high')) : -Infinity,
    skipped: Number(value(row, 'points') ?? 0) - count,
  };
};

/** A row's columns by name. */
const columnsOf = (columns: ColumnInfo[]) => {
  const at = new Map(columns.map((c, i) => [c.Name, i]));
  return (row: Row, name: string) => row.Data?.[at.get(name) ?? -1]?.ScalarValue;
};

const toRangePoint = (value: (row: Row, name: string) => string | undefined, row: Row): RangePoint => {
  const nanos = BigInt(value(row, 'time_ns') ?? '0');
  return {
    device_id: value(row, 'device_id') ?? '',
    fleet_id: value(row, 'fleet_id') ?? '',
    tag: value(row, 'tag') ?? '',
    ms: Number(nanos / 1_000_000n),
    us: Number((nanos / 1000n) % 1000n),
    inMs: Number(value(row, 'timestamp_in')),
    payload: JSON.parse(value(row, 'payload') ?? 'null'),
  };
};

const toPoint = (workspaceId: string, p: RangePoint): DataPoint => ({
  workspace_id: workspaceId,
  fleet_id: p.fleet_id,
  device_id: p.device_id,
  tag: p.tag,
  timestamp_device: formatTime(p),
  timestamp_in: new Date(p.inMs).toISOString(),
  payload: p.payload,
});

/** Records of one workspace, at most WRITE_RECORDS_MAX, in the order given. */
const batchesOf = (records: Pending[]) => {
  const byWorkspace = new Map<string, Pending[]>();
  for (const record of records) {
    const of = byWorkspace.get(record.workspaceId);
    if (of) of.push(record);
    else byWorkspace.set(record.workspaceId, [record]);
  }
  return [...byWorkspace.values()].flatMap((of) =>
    Array.from({ length: Math.ceil(of.length / WRITE_RECORDS_MAX) }, (_, i) => of.slice(i * WRITE_RECORDS_MAX, (i + 1) * WRITE_RECORDS_MAX)),
  );
};

/**
 * One WriteRecords call. What the records share is said once, in CommonAttributes: Timestream
 * meters a call by its size in KiB, common attributes counted once, so a batch of small points
 * costs a fraction of a write each.
 * @returns the records refused (RecordIndex into `batch`); throws on any other error.
 */
const writeBatch = async (writer: TimestreamWriteClient, options: TimestreamStoreOptions, batch: Pending[]): Promise<RejectedRecord[]> => {
  try {
    await writer.send(
      new WriteRecordsCommand({
        DatabaseName: options.database,
        TableName: options.table,
        CommonAttributes: {
          Dimensions: [{ Name: 'workspace_id', Value: batch[0].workspaceId }],
          MeasureName: MEASURE_NAME,
          MeasureValueType: 'MULTI',
          TimeUnit: 'MICROSECONDS',
        },
        Records: batch.map((p) => p.record),
      }),
    );
    return [];
  } catch (error) {
    const rejected = (error as { name?: string; RejectedRecords?: RejectedRecord[] }).RejectedRecords;
    if ((error as Error).name !== 'RejectedRecordsException' || !rejected) throw error;
    return rejected;
  }
};

/** A cloud-stamped record moved to the next microsecond that is not a whole millisecond. */
const nextStamp = (pending: Pending): Pending => {
  const moved = addMicros(pending.time, 1);
  const time = isCloudStamp(moved) ? moved : addMicros(moved, 1);
  return { ...pending, time, record: { ...pending.record, Time: microsText(time) } };
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

  /** The rows of a query, a page (≤ 1,000 rows) at a time, each read by `read`; a reader that stops early cancels the query. */
  async function* pages<T>(QueryString: string, read: (value: (row: Row, name: string) => string | undefined, row: Row) => T): AsyncGenerator<T[]> {
    reader ??= new TimestreamQueryClient({});
    let NextToken: string | undefined;
    let queryId: string | undefined;
    let finished = false;
    try {
      do {
        const page = await reader.send(new QueryCommand({ QueryString, NextToken, MaxRows: QUERY_PAGE_ROWS }));
        queryId = page.QueryId;
        NextToken = page.NextToken;
        const value = columnsOf(page.ColumnInfo ?? []);
        const rows = (page.Rows ?? []).map((row) => read(value, row));
        if (rows.length) yield rows;
      } while (NextToken);
      finished = true;
    } finally {
      // A reader that stops early (a client that hung up) frees the query's resources.
      if (!finished && NextToken && queryId) await reader.send(new CancelQueryCommand({ QueryId: queryId })).catch(() => undefined);
    }
  }

  return {
    async write(points: PointToStore[]): Promise<WriteResult> {
      const { records, duplicates } = toRecords(points);
      writer ??= new TimestreamWriteClient({});
      let discarded = duplicates;
      const failures: RejectedRecord[] = [];
      let pending = records;
      for (let round = 0; pending.length; round++) {
        if (round > RESTAMPS_MAX) throw new Error(`${pending.length} cloud-stamped point(s) found no free microsecond after ${RESTAMPS_MAX} tries.`);
        const restamp: Pending[] = [];
        for (const batch of batchesOf(pending)) {
          const rejected = await writeBatch(writer, options, batch);
          for (const record of rejected) {
            const at = batch[record.RecordIndex ?? 0];
            if (!isDuplicate(record)) failures.push({ ...record, RecordIndex: at.index });
            // Another point holds the stamp (a point stored again is identical, so never rejected):
            // the next free microsecond, never a whole millisecond.
            else if (isCloudStamp(at.time)) restamp.push(nextStamp(at));
            else discarded++;
          }
        }
        pending = restamp;
      }
      if (failures.length) throw new RejectedPointsError(failures);
      return { written: points.length - discarded, discarded };
    },

    async *query(query: TimeseriesQuery): AsyncGenerator<DataPoint> {
      const [start, end] = [query.start && parseTime(query.start, true), query.end && parseTime(query.end, true)];
      if (query.size <= 0 || (start && end && compareTime(start, end) >= 0)) return;
      for await (const rows of pages(buildQuerySql(options.database, options.table, query), toRangePoint)) {
        for (const point of rows) yield toPoint(query.workspaceId, point);
      }
    },

    async *readRange(range: TimeseriesRange): AsyncGenerator<RangePoint[]> {
      const [start, end] = [range.start && parseTime(range.start, true), range.end && parseTime(range.end, true)];
      if (start && end && compareTime(start, end) >= 0) return;
      yield* pages(buildRangeSql(options.database, options.table, range), toRangePoint);
    },

    async *aggregate(aggregation: StoreAggregation): AsyncGenerator<BucketTotals[]> {
      const { start, end } = aggregation.range;
      const [from, to] = [start && parseTime(start, true), end && parseTime(end, true)];
      if (from && to && compareTime(from, to) >= 0) return;
      yield* pages(buildAggregateSql(options.database, options.table, aggregation), toTotals);
    },
  };
};
