import type { Every } from '../../shared/time-buckets';

/**
 * The time-series store's contract: what the ingest handler writes and the storage query reads,
 * whichever backend holds the points (DESIGN §5). The backends implement it; `./index.ts` picks one.
 */

/** One data point, as stored and as returned by the storage query (plus workspace_id). */
export interface DataPoint {
  workspace_id: string;
  fleet_id: string;
  device_id: string;
  tag: string;
  /**
   * RFC 3339 UTC: with milliseconds when the device gave it, with microseconds when it is a cloud
   * stamp (shared/timestamps.ts).
   */
  timestamp_device: string;
  /** RFC 3339 UTC with milliseconds: when the cloud received it. */
  timestamp_in: string;
  payload: unknown;
}

/** A point to store: a DataPoint, and where it stood in its publish request. */
export interface PointToStore extends DataPoint {
  /**
   * The point's index among the points of its publish request (0–9999, default 0): orders
   * duplicates that arrived together, so that the first of the request wins on every read. The
   * same message gives the same indexes on every retry. Queries do not return it.
   */
  sequence?: number;
  /**
   * Where a cloud-stamped point came from, 8 to 32 hex digits: a digest of its request and place
   * in it, or of its MQTT message. Two cloud-stamped points of one device, tag and millisecond are
   * the same point only when their origins are the same (a retry, maybe stamped anew); two
   * requests stamped at once by two containers stay two points, even under the same stamp.
   * Required for a cloud stamp, ignored otherwise. Queries do not return it.
   */
  origin?: string;
  /**
   * The workspace's data retention when the point is written, in days: the store may remove the
   * point that long after its timestamp_device (`dynamodb`: the item's TTL; `timestream`: ignored,
   * its retention is the table's). Absent: kept. What reads return never depends on it: the
   * domain filters reads by the workspace's retention now.
   */
  retention_days?: number;
}

export interface WriteResult {
  /**
   * Points this call stored. With `dynamodb`, a point that another container already stored an
   * earlier arrival of is stored too, and never read (see `write`).
   */
  written: number;
  /** Points dropped as duplicates of a (device_id, tag, timestamp_device) the call held or the store knew stored. */
  discarded: number;
}

/** Which points a read selects: a workspace's, in a time range, of some devices, tags and fleets. */
export interface TimeseriesRange {
  workspaceId: string;
  /** Included lower bound on timestamp_device (RFC 3339). */
  start?: string;
  /** Excluded upper bound on timestamp_device (RFC 3339). */
  end?: string;
  devices?: string[];
  tags?: string[];
  /** Points stored with one of these fleets (the device's fleet when the point arrived). */
  fleets?: string[];
  /** Read strongly consistent (`dynamodb`): every write acknowledged before the read is in it. */
  consistent?: boolean;
}

export interface TimeseriesQuery extends TimeseriesRange {
  /** Page index: records from*size … from*size+size-1 of the sorted result. */
  from: number;
  size: number;
  /** `asc` for `sort=timestamp_device`, `desc` for `-timestamp_device` (the default). */
  order: 'asc' | 'desc';
}

/**
 * A point as a range read yields it: its times as numbers, so that a reader that does not print
 * them (aggregation) never formats them, and one that does (an export) formats them once.
 */
export interface RangePoint {
  device_id: string;
  fleet_id: string;
  tag: string;
  /** timestamp_device: milliseconds since the epoch, and microseconds within the millisecond (0 unless a cloud stamp). */
  ms: number;
  us: number;
  /** timestamp_in: milliseconds since the epoch. */
  inMs: number;
  payload: unknown;
}

/**
 * What one bucket (of one device, when grouped) adds up to: of the points whose value is a number,
 * how many, their sum, min and max; and how many points had no number there.
 */
export interface BucketTotals {
  /** The bucket's start, ms since the epoch. */
  start: number;
  device_id?: string;
  count: number;
  sum: number;
  min: number;
  max: number;
  skipped: number;
}

/** An aggregation a store computes itself: of a range, on a fixed grid of UTC (`every` shifted by a constant offset). */
export interface StoreAggregation {
  range: TimeseriesRange;
  every: Every;
  /** The zone's UTC offset over the whole range, in minutes: buckets start where the zone's wall clock shows a multiple of `every`. */
  offsetMinutes: number;
  groupByDevice: boolean;
}

/** Where a re-stamp of a workspace's expiry stopped: the shard it was reading and its last item there. */
export interface RestampCursor {
  shard: number;
  after?: { pk: string; sk: string };
}

/** A re-stamp of the expiry of a workspace's stored points, after its data retention changed. */
export interface ExpiryRestamp {
  workspaceId: string;
  /** The earliest key time (RFC 3339) whose items are re-stamped; `''`: every item. */
  from: string;
  /** The retention now, in days; null removes the expiry (kept forever). */
  days: number | null;
  /** Now, in ms: an expiry already past becomes now (TTL ignores times more than five years past). */
  now: number;
  /** Where an earlier call stopped. */
  resume?: RestampCursor;
  /** Stops once this time (ms since the epoch) is passed, answering where. */
  deadline: number;
}

/**
 * Where a purge stopped: the partition it was reading (the workspace's shards 0…7, then 8: its
 * stamps of sealed hours) and its last item there.
 */
export type PurgeCursor = RestampCursor;

/** A purge of stored points: a deleted device's, or (no device) every item of a deleted workspace. */
export interface PointsPurge {
  workspaceId: string;
  /** The device whose points go; none: every item of the workspace. */
  deviceId?: string;
  /** Now, in ms: the sealed hours whose points change are stamped, so that their rollups are computed again. */
  now: number;
  /** Where an earlier call stopped. */
  resume?: PurgeCursor;
  /** Stops once this time (ms since the epoch) is passed, answering where. */
  deadline: number;
}

/** One device's totals of a field in one hour, as a rollup keeps them. */
export interface RollupRow {
  device_id: string;
  count: number;
  sum: number;
  min: number;
  max: number;
  skipped: number;
}

/** What a rollup was computed under: the hour's stamp then, and the workspace's retention version. */
export interface RollupVersion {
  /** The hour's start, ms since the epoch (a whole UTC hour). */
  hour: number;
  /** The token of the hour's stamp when its points were read (none: never written late). */
  stamp?: string;
  /** The workspace's `retention_version` when its points were read (0: never set). */
  retentionVersion: number;
}

/** A rollup: the totals of one field in one UTC hour, per device, and what they were computed under. */
export interface HourRollup extends RollupVersion {
  rows: RollupRow[];
  /** When the store may delete it, seconds since the epoch. */
  expires: number;
}

/** An hour's stamp: a token put anew by every write of points into the hour once it is sealed. */
export interface HourStamp {
  token: string;
  /** Put before a write's points, and replaced once they are stored: the hour's points may be changing. */
  pending: boolean;
}

/** Where a store keeps rollups and the stamps of hours written late (`../../domain/rollups.ts`). */
export interface RollupStore {
  /**
   * The stamps of the hours in [fromHour, toHour), read strongly consistent: a write's points are
   * stored after its pending stamp and before its final one, so a read of points after this one
   * has every point of each final stamp it saw.
   */
  stampsOfHours(workspaceId: string, fromHour: number, toHour: number): Promise<Map<number, HourStamp>>;
  /** What the rollups of one field (its hash) kept for the hours in [fromHour, toHour) were computed under, without their rows. */
  versionsOfField(workspaceId: string, fieldHash: string, fromHour: number, toHour: number): Promise<Map<number, RollupVersion>>;
  /** The rollups, rows and all, of one field for the hours in [fromHour, toHour). */
  rollupsOfField(workspaceId: string, fieldHash: string, fromHour: number, toHour: number): Promise<Map<number, HourRollup>>;
  /**
   * Keeps rollups, each replacing the one of its hour.
   * @returns the hours not kept: too many devices for one item.
   */
  keepRollups(workspaceId: string, fieldHash: string, rollups: HourRollup[]): Promise<number[]>;
}

export interface TimeseriesStore {
  /**
   * Stores points, deduplicated. With `rollups`, a write that stores points in a sealed hour
   * (`SEALED_AFTER_MS` after its end) stamps that hour anew, pending before its points and final
   * after them, so that the hour's rollups are computed again. A point with the device's own time: on (device_id, tag,
   * timestamp_device), the first write wins and queries return one point per key (`dynamodb` keeps
   * the earliest arrival, timestamp_in then sequence, whatever order the writes land in;
   * `timestream` the first one stored). A cloud-stamped point: on its origin, so that no two
   * points a device sent are ever merged. Idempotent: writing the same batch again stores nothing
   * new. Throws only when a point could not be stored (the caller retries the whole batch).
   */
  write(points: PointToStore[]): Promise<WriteResult>;
  /**
   * The page of points the query selects, in order, ties broken deterministically (device_id,
   * then tag) so that consecutive pages never overlap or skip. Yields as it reads: memory does
   * not grow with `size`.
   */
  query(query: TimeseriesQuery): AsyncIterable<DataPoint>;
  /**
   * Every point of the range, deduplicated as `query` does, oldest first (ties by device_id, then
   * tag), in runs: as many points as came together, so that a reader of millions of points awaits
   * once per run, not once per point. Memory does not grow with the range.
   */
  readRange(range: TimeseriesRange): AsyncIterable<RangePoint[]>;
  /**
   * Re-stamps the expiry of a workspace's stored points with its retention now. Only a store that
   * expires points one by one has it (`dynamodb`); Timestream's retention is the table's.
   * @returns how many items it re-stamped, and where it stopped when the deadline came first.
   */
  restampExpiry?(restamp: ExpiryRestamp): Promise<{ items: number; cursor?: RestampCursor }>;
  /**
   * Deletes a deleted device's stored points, or every item of a deleted workspace. Only a store
   * that can delete points one by one has it (`dynamodb`); Timestream has no delete of rows.
   * @returns how many items it deleted or rewrote, and where it stopped when the deadline came first.
   */
  purgePoints?(purge: PointsPurge): Promise<{ items: number; cursor?: PurgeCursor }>;
  /**
   * The totals of each bucket of the payload itself (a point whose payload is not a number is
   * skipped), computed by the store, in answer order (start, then device): only a store with a
   * query language has it (`timestream`).
   */
  aggregate?(aggregation: StoreAggregation): AsyncIterable<BucketTotals[]>;
  /**
   * Rollups of sealed hours, kept by aggregations (`dynamodb`): a store whose aggregation reads
   * every point has them; Timestream's SQL aggregates in the store.
   */
  rollups?: RollupStore;
}
