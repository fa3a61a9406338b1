/**
 * Key builders of the `dynamodb` time-series table. Points are stored in **packs**: one item holds
 * the points of one workspace that one write brought, as close together in time as {@link PACK_SPAN_MICROS}:
 *
 * | attribute | value                                                          | why                                           |
 * |-----------|----------------------------------------------------------------|-----------------------------------------------|
 * | pk        | `TS#<workspace_id>#<shard>`, shard = hash(pack id) mod 8       | a workspace's writes spread over 8 partitions |
 * | sk        | `<key time of the pack's earliest point>#!<pack id>`           | a pack sorts before every point it holds      |
 * | p         | the points, JSON (`./dynamodb-packing.ts` PackBody)            | one write unit per KB, not per point          |
 *
 * - Why packs: DynamoDB bills a write unit per started KB of each item, so a point of 100 bytes in
 *   an item of its own costs as much as ten in a pack; a pack also stores its attribute names once.
 * - Order: a pack sorts at its earliest point and holds nothing later than `PACK_SPAN_MICROS` after
 *   it, so a reader that reads sort keys in order knows when no later item can hold an earlier
 *   point, and orders the points with a bounded buffer (`./dynamodb-merge.ts`).
 * - Key times: `2021-07-08T14:21:15.915Z` for a whole millisecond (every device's own time), and
 *   `2021-07-08T14:21:15.915Z%123` for a cloud stamp 123 µs into it (shared/timestamps.ts): `%`
 *   sorts above `#`, so key times sort exactly as the microseconds they name, and a bound with
 *   microseconds selects exactly those.
 * - Deduplication is the reader's (see `./dynamodb-dedup.ts`): a device's own `timestamp_device` is a
 *   dedup key, the earliest arrival winning; a cloud-stamped point is identified by its origin.
 * - Items written before packs (one point per item, sort key
 *   `<timestamp>#<device_id>#<tag>[#<version>]`, sharded by device) are read as points too.
 */
import { fnv1a } from '../../shared/digest';
import type { Time } from '../../shared/timestamps';

/** Shards per workspace; fixed for the life of a table. */
export const SHARDS = 8;

/** The table's key attributes; the CDK construct and the local table use the same. */
export const TIMESERIES_KEY = { partition: 'pk', sort: 'sk' } as const;

/**
 * The table's TTL attribute: when DynamoDB may delete an item, in seconds since the epoch (`TTL`
 * itself is a reserved word of DynamoDB's expressions). Set from the workspace's data retention.
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/TTL.html
 */
export const TIMESERIES_TTL_ATTRIBUTE = 'expires';

const DAY_MS = 86_400_000;

/**
 * The TTL of an item whose latest point is at `latestMs`, under a retention of `days`: that many
 * days after the point, and never before `notBeforeMs` (an expiry already past becomes now:
 * DynamoDB's TTL ignores times more than five years in the past, which would keep the item
 * forever), in whole seconds, rounded up.
 */
export const expiresAt = (latestMs: number, days: number, notBeforeMs: number) => Math.ceil(Math.max(latestMs + days * DAY_MS, notBeforeMs) / 1000);

/** What IDs and tags may contain: every character sorts above the `#` separator. */
export const KEY_PART = /^[A-Za-z0-9_.-]{1,128}$/;

/** A whole-millisecond key time: RFC 3339 UTC with milliseconds, years 0000–9999. */
export const KEY_TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** Longest span of a pack: its points lie within this many microseconds of its first. */
export const PACK_SPAN_MICROS = 10_000_000;

/** What separates a pack's key time from its ID: `!` sorts below every character of an ID or tag. */
const PACK_MARK = '#!';

/** The shard a legacy point item was written to (one item per point, sharded by device). */
export const shardOf = (deviceId: string): number => fnv1a(deviceId) % SHARDS;

/** The partition holding one shard of a workspace's points. */
export const seriesPartition = (workspaceId: string, shard: number): string => `TS#${workspaceId}#${shard}`;

/** A time as sort keys hold it: `…15.915Z`, or `…15.915Z%123` with microseconds. */
export const keyTime = ({ ms, us }: Time): string => {
  const iso = new Date(ms).toISOString();
  return us === 0 ? iso : `${iso}%${String(us).padStart(3, '0')}`;
};

const KEY_TIME = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)(?:%(\d{3}))?/;

/** The time that starts a sort key, or undefined when none does. */
export const keyTimeOf = (sk: string): Time | undefined => {
  const match = KEY_TIME.exec(sk);
  return match ? { ms: Date.parse(match[1]), us: Number(match[2] ?? 0) } : undefined;
};

/** The key of a pack: a partition picked by its ID, and a sort key at its earliest point. */
export const packKey = (workspaceId: string, earliest: Time, packId: string) => ({
  pk: seriesPartition(workspaceId, fnv1a(packId) % SHARDS),
  sk: `${keyTime(earliest)}${PACK_MARK}${packId}`,
});

/** Whether a sort key is a pack's. */
export const isPackKey = (sk: string) => sk.includes(PACK_MARK);

/**
 * The version of a legacy item, from its sort key: `#<timestamp_in>#<sequence>#<payload digest>`
 * after its series key (the layout before packs), or none (the layout before versions: that
 * key's first write).
 */
const LEGACY_VERSION = /#(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)#(\d{4})#([0-9a-f]{8})$/;

/** The arrival of a legacy item's point (timestamp_in ms, sequence, digest), or the earliest there is when it has none. */
export const legacyVersionOf = (sk: string): { inMs: number; sequence: number; tail: string } => {
  const match = LEGACY_VERSION.exec(sk);
  return match ? { inMs: Date.parse(match[1]), sequence: Number(match[2]), tail: match[3] } : { inMs: -Infinity, sequence: 0, tail: '' };
};

/** Every partition of a workspace: packs hold many devices, so a device filter reads them all. */
export const queryPartitions = (workspaceId: string): string[] => [...Array(SHARDS).keys()].map((shard) => seriesPartition(workspaceId, shard));

/**
 * Rollups and stamps (`../../domain/rollups.ts`) share the table with the points, under partitions of
 * their own that no point read touches: sort key the UTC hour (`2026-01-01T13:00:00.000Z`).
 *
 * | pk                              | what it holds                                                      |
 * |---------------------------------|--------------------------------------------------------------------|
 * | `R#<workspace_id>#<field hash>` | one hour's totals of one field per device, kept by an aggregation  |
 * | `S#<workspace_id>`              | one hour's stamp: a token put anew by each write into a sealed hour |
 */
export const rollupPartition = (workspaceId: string, fieldHash: string) => `R#${workspaceId}#${fieldHash}`;
export const stampPartition = (workspaceId: string) => `S#${workspaceId}`;
export const HOUR_MS = 3_600_000;
/** The sort key of the hour that starts at `hourMs`. */
export const hourKey = (hourMs: number) => new Date(hourMs).toISOString();

/**
 * When an hour is sealed: this long after its end, aggregations may keep its rollup. Points that on-time
 * traffic sends are stored well before; a write into a sealed hour stamps it (`STAMP_MARGIN_MS` early,
 * for the clocks of two Lambda containers).
 */
export const SEALED_AFTER_MS = 2 * HOUR_MS;
export const STAMP_MARGIN_MS = 10 * 60_000;

/**
 * Rollups are a cache: each expires at most this long after it is kept (sooner with its hour's
 * points, under a retention), and is computed again when asked for. A stamp outlives every rollup
 * kept before it (`STAMP_LIFETIME_DAYS`), so an expired stamp never makes an older rollup good again.
 */
export const ROLLUP_LIFETIME_DAYS = 90;
export const STAMP_LIFETIME_DAYS = ROLLUP_LIFETIME_DAYS + 10;
