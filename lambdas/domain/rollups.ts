import { createHash } from 'node:crypto';
import { logger } from '../shared/logger';
import { formatTime, parseTime } from '../shared/timestamps';
import type { HourRollup, RangePoint, RollupRow, RollupStore, TimeseriesRange, TimeseriesStore } from '../stores/timeseries';
import { expiresAt, HOUR_MS, SEALED_AFTER_MS } from '../stores/timeseries/keys';
import type { WorkspaceRecord } from '../stores/workspace-store';
import { addValue, valueAt, type Aggregation, type HourTotals } from './bucket-totals';

/**
 * Rollups: an aggregation keeps the totals of each sealed UTC hour it read whole (per device, of
 * the field it aggregates), and the next aggregation of that hour adds them up instead of reading
 * the hour's points (docs/storage.md#rollups-of-sealed-hours).
 *
 * - Kept only for hours that ended `SEALED_AFTER_MS` ago: on-time traffic writes into the hours
 *   before, which are always read from the points; a write into a sealed hour stamps it anew
 *   (`../stores/timeseries/dynamodb.ts`), after its points.
 * - A rollup is used only while the hour's stamp is the one its points were read under, and the
 *   workspace's retention version is the same: stamps are read first, and the points of an hour
 *   to keep are read strongly consistent after them, so a rollup never misses a point written
 *   before the stamp it names; one that raced a late write names the stamp before it, and is
 *   computed again.
 * - Used for a bucket only when the hour lies within it (whole hours or days in a zone whose offset
 *   is whole hours), and only without tag or fleet filters (a rollup's rows are per device).
 *   Kept only by a read of every device, and not while a retention change's re-stamp is owed
 *   (points of hours the old setting had expired may still be deleted).
 */

/** The partition key part of a field: its path, hashed (a payload key may hold any character). */
export const fieldHash = (field: readonly string[]) => createHash('sha256').update(JSON.stringify(field)).digest('base64url').slice(0, 22);

/** Rollups put in one request: BatchWriteItem's 25 items. */
const KEEP_BATCH = 25;

const floorHour = (ms: number) => Math.floor(ms / HOUR_MS) * HOUR_MS;

/** What an aggregation with rollups works with: the store, the workspace (its retention), the clock. */
export interface RollupContext {
  store: TimeseriesStore;
  rollups: RollupStore;
  workspace: Pick<WorkspaceRecord, 'id' | 'data_retention_days' | 'retention_version' | 'retention_owed_from'>;
  now: number;
}

/** The totals of one hour being read from its points, per device. */
class HourBuilder {
  private readonly rows = new Map<string, RollupRow>();

  constructor(readonly hour: number) {}

  add(point: RangePoint, field: readonly string[]) {
    let row = this.rows.get(point.device_id);
    if (!row) this.rows.set(point.device_id, (row = { device_id: point.device_id, count: 0, sum: 0, min: Infinity, max: -Infinity, skipped: 0 }));
    addValue(row, valueAt(point.payload, field));
  }

  rowsInOrder() {
    return [...this.rows.values()].sort((a, b) => (a.device_id < b.device_id ? -1 : 1));
  }
}

/**
 * The entries of a range for `bucketTotals`, oldest first: each hour that has a rollup good for
 * this aggregation as its totals, and the points of the time between. Returns undefined when no
 * rollup can serve (a filter of tags or fleets, no start, no sealed hour): the caller reads the points.
 */
export const rollupEntries = async (context: RollupContext, range: TimeseriesRange, aggregation: Aggregation): Promise<AsyncIterable<Array<RangePoint | HourTotals>> | undefined> => {
  const { store, rollups: rollupStore, workspace, now } = context;
  if (range.tags?.length || range.fleets?.length || range.start === undefined) return undefined;
  const start = parseTime(range.start)!;
  const end = range.end === undefined ? undefined : parseTime(range.end)!;
  const firstHour = Math.ceil((start.ms + (start.us ? 1 : 0)) / HOUR_MS) * HOUR_MS;
  const lastHourEnd = floorHour(Math.min(end?.ms ?? Infinity, now - SEALED_AFTER_MS));
  if (firstHour >= lastHourEnd) return undefined;

  const hash = fieldHash(aggregation.field);
  const [stamps, kept] = await Promise.all([rollupStore.stamps(workspace.id, firstHour, lastHourEnd), rollupStore.rollups(workspace.id, hash, firstHour, lastHourEnd)]);
  const version = workspace.retention_version ?? 0;
  const good = (hour: number) => {
    const rollup = kept.get(hour);
    return rollup !== undefined && rollup.retentionVersion === version && rollup.stamp === stamps.get(hour);
  };
  const withinBucket = (hour: number) => {
    const bucket = aggregation.clock.bucketOf(hour);
    return bucket.start <= hour && bucket.end >= hour + HOUR_MS;
  };
  const devices = range.devices?.length ? new Set(range.devices) : undefined;
  // Only a read of every device sees an hour whole; a re-stamp still owed may yet delete points.
  const keeping = !devices && workspace.retention_owed_from === undefined;
  const days = workspace.data_retention_days ?? undefined;

  const keep = async (hours: HourBuilder[]) => {
    const rollups = hours.map(
      (built): HourRollup => ({
        hour: built.hour,
        retentionVersion: version,
        rows: built.rowsInOrder(),
        ...(stamps.has(built.hour) ? { stamp: stamps.get(built.hour) } : {}),
        ...(days ? { expires: expiresAt(built.hour + HOUR_MS, days, now) } : {}),
      }),
    );
    try {
      await rollupStore.keep(workspace.id, hash, rollups);
    } catch (error) {
      // A rollup not kept is read from the points next time: the answer stands.
      logger.warn('Rollups not kept.', { workspace_id: workspace.id, hours: rollups.length, error: error as Error });
    }
  };

  /** The points of [from, to) (ms; undefined: the range's own bound), keeping the rollups of the sealed hours read whole. */
  async function* pointsBetween(from: number | undefined, to: number | undefined): AsyncGenerator<RangePoint[]> {
    const hours: number[] = [];
    if (keeping) for (let hour = from ?? firstHour; hour + HOUR_MS <= Math.min(to ?? Infinity, lastHourEnd); hour += HOUR_MS) if (!good(hour)) hours.push(hour);
    const segment: TimeseriesRange = {
      ...range,
      ...(from === undefined ? {} : { start: formatTime({ ms: from, us: 0 }) }),
      ...(to === undefined ? {} : { end: formatTime({ ms: to, us: 0 }) }),
      ...(hours.length ? { consistent: true } : {}),
    };
    let next = 0;
    let building: HourBuilder | undefined;
    const done: HourBuilder[] = [];
    /** Closes every hour to keep that ends at or before `ms`. */
    const closeBefore = async (ms: number) => {
      while (next < hours.length && hours[next] + HOUR_MS <= ms) {
        done.push(building?.hour === hours[next] ? building : new HourBuilder(hours[next]));
        building = undefined;
        next++;
      }
      if (done.length >= KEEP_BATCH) await keep(done.splice(0));
    };
    try {
      for await (const run of store.readRange(segment)) {
        if (next < hours.length) {
          for (const point of run) {
            if (point.ms >= hours[next] + HOUR_MS) await closeBefore(point.ms);
            if (next < hours.length && point.ms >= hours[next]) (building ??= new HourBuilder(hours[next])).add(point, aggregation.field);
          }
        }
        yield run;
      }
      await closeBefore(Infinity);
    } finally {
      if (done.length) await keep(done);
    }
  }

  async function* entries(): AsyncGenerator<Array<RangePoint | HourTotals>> {
    let from: number | undefined;
    for (let hour = firstHour; hour < lastHourEnd; hour += HOUR_MS) {
      if (!good(hour) || !withinBucket(hour)) continue;
      if ((from ?? start.ms) < hour) yield* pointsBetween(from, hour);
      const rows = kept.get(hour)!.rows;
      yield [{ hour, rows: devices ? rows.filter((row) => devices.has(row.device_id)) : rows }];
      from = hour + HOUR_MS;
    }
    if (from === undefined || end === undefined || from < end.ms || end.us > 0) yield* pointsBetween(from, undefined);
  }
  return entries();
};
