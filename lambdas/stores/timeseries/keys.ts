/**
 * Key builders of the `dynamodb` time-series table (one item per stored arrival of a data point):
 *
 * | attribute | value                                                   | why                                     |
 * |-----------|---------------------------------------------------------|-----------------------------------------|
 * | pk        | `TS#<workspace_id>#<shard>`, shard = hash(device) mod 8 | a workspace's writes spread over 8 partitions |
 * | sk        | `<timestamp_device>#<device_id>#<tag>#<version>`        | the series key in the query's order, then the arrival |
 * |           | version = `<timestamp_in>#<sequence>#<payload digest>`  | orders the arrivals of one series key   |
 *
 * - Deduplication: the series key (timestamp_device, device_id, tag) is the dedup key. Each
 *   arrival of a point is written unconditionally under its own version, so the versions of one
 *   key sit side by side, earliest first; a reader keeps the earliest and skips the others. The
 *   earliest arrival wins whatever order the writes land in, and a retried write of the same
 *   arrival rewrites the same item. Why not a conditional put: see `./dynamodb.ts`.
 * - Order: timestamps are fixed-width (`2021-07-08T14:21:15.915Z`) and IDs and tags use only
 *   `[A-Za-z0-9_.-]`, all above `#`, so sorting sk as bytes sorts by (timestamp_device,
 *   device_id, tag, version): the query's order with its deterministic tie-break. A query reads the
 *   shards in parallel and merges them by sk; `descending` is the exact reverse.
 * - Hot partitions: one partition per workspace would cap a workspace at one partition's write
 *   rate (1,000 WCU/s), and time-ordered sort keys defeat DynamoDB's split-for-heat. Eight shards
 *   give a workspace eight partitions' worth. The shard comes from the device, so one device's
 *   series lives in one shard and a query filtered by device reads only its devices' shards.
 *   SHARDS is fixed for the life of a table: changing it would move keys and break dedup.
 * - Filters: a device filter reads its devices' shards over the time range and drops the other
 *   devices' points there (a FilterExpression: they are read and paid for); a tag filter reads
 *   the range the same way. A per-device index would make one-device queries cheaper at the cost
 *   of a second write per point; the time range is what keeps such reads small.
 */

/** Shards per workspace; fixed for the life of a table. */
export const SHARDS = 8;

/** The table's key attributes; the CDK construct and the local table use the same. */
export const TIMESERIES_KEY = { partition: 'pk', sort: 'sk' } as const;

/** What IDs and tags may contain: every character sorts above the `#` separator. */
export const KEY_PART = /^[A-Za-z0-9_.-]{1,128}$/;

/** A timestamp as the keys hold it: RFC 3339 UTC with milliseconds, years 0000–9999. */
export const KEY_TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

// FNV-1a (32-bit): stable across runtimes and cheap; only the spread matters, not secrecy.
const fnv1a = (text: string): number => {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
};

/** The shard of a device's series. */
export const shardOf = (deviceId: string): number => fnv1a(deviceId) % SHARDS;

/** The partition holding one shard of a workspace's points. */
export const seriesPartition = (workspaceId: string, shard: number): string => `TS#${workspaceId}#${shard}`;

/** The dedup key of a point, which starts its sort key: `<timestamp_device>#<device_id>#<tag>`. */
const seriesKey = (point: { device_id: string; tag: string; timestamp_device: string }) => `${point.timestamp_device}#${point.device_id}#${point.tag}`;

/**
 * The version of one arrival: `<timestamp_in>#<sequence>#<digest of the payload JSON>`, fixed-width.
 * An earlier arrival sorts first; among points of one request (one timestamp_in), the earlier in
 * the request; two requests in the same millisecond still order the same way every time.
 */
export const arrivalVersion = (timestampIn: string, sequence: number, payloadJson: string) =>
  `${timestampIn}#${String(sequence).padStart(4, '0')}#${fnv1a(payloadJson).toString(16).padStart(8, '0')}`;

/** A version as it ends a sort key: `#`, 24 of timestamp_in, `#`, 4 of sequence, `#`, 8 of digest. */
const VERSION_SUFFIX = /^#\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z#\d{4}#[0-9a-f]{8}$/;
const VERSION_LENGTH = 39;

/**
 * The dedup key held in a sort key: the sort key without its version. A sort key without one
 * (written before points were versioned) is its own dedup key: it sorts before every version of
 * its key, and it was that key's first write. IDs and tags cannot hold the `:` of a timestamp, so
 * no unversioned sort key ends like a version.
 */
export const seriesKeyOf = (sk: string) => (VERSION_SUFFIX.test(sk.slice(-VERSION_LENGTH)) ? sk.slice(0, -VERSION_LENGTH) : sk);

/** The key of one arrival of a data point; its sort key starts with its dedup key. */
export const pointKey = (point: {
  workspace_id: string;
  device_id: string;
  tag: string;
  timestamp_device: string;
  timestamp_in: string;
  sequence: number;
  payloadJson: string;
}) => ({
  pk: seriesPartition(point.workspace_id, shardOf(point.device_id)),
  sk: `${seriesKey(point)}#${arrivalVersion(point.timestamp_in, point.sequence, point.payloadJson)}`,
});

/** The partitions a query reads: its devices' shards, or every shard of the workspace. */
export const queryPartitions = (workspaceId: string, devices?: readonly string[]): string[] => {
  const shards = devices?.length ? [...new Set(devices.map(shardOf))].sort((a, b) => a - b) : [...Array(SHARDS).keys()];
  return shards.map((shard) => seriesPartition(workspaceId, shard));
};
