import { createHash } from 'node:crypto';
import { logger } from '../../shared/logger';
import { formatTime, parseTime } from '../../shared/timestamps';
import type { HourRollup, RangePoint, RollupRow, RollupStore, TimeseriesRange, TimeseriesStore } from '../../stores/timeseries';
import { expiresAt, HOUR_MS, ROLLUP_LIFETIME_DAYS, SEALED_AFTER_MS } from '../../stores/timeseries/keys';
import type { WorkspaceRecord } from '../../stores/workspace-store';
import { addValue, valueAt, type Aggregation, type HourTotals } from './bucket-totals';

/**
 * Rollups: an aggregation keeps the totals of each sealed UTC hour it read whole (per device, of
 * the field it aggregates), and the next aggregation of that hour adds them up instead of reading
 * the hour's points (docs/storage.md#rollups-of-sealed-hours).
 *
 * - Kept only for hours that ended `SEALED_AFTER_MS` ago: on-time traffic writes into the hours
 *   before, which are always read from the points. A write into a sealed hour stamps it
 *   (`../stores/timeseries/dynamodb.ts`): pending before its points, final after them.
 * - A rollup is used only while the hour's stamp is the final one its points were read under, and
 *   the workspace's retention version is the same. Stamps are read first, and the points of an hour
 *   to keep strongly consistent after them, so a rollup has every point of the stamp it names; an
 *   hour whose stamp is pending is read from its points and not kept (a write that never finishes
 *   leaves it so); a rollup that raced a late write names an older stamp and is computed again.
 * - Used for a bucket only when the hour lies within it (hours, days and 2–12-hour buckets of
 *   zones whose offsets are whole hours; the whole hours inside the days of a zone at :30 or :45),
 *   and only with a start and without tag or fleet filters (a rollup's rows are per device). Kept
 *   only by a read of every device, and not while a retention change's re-stamp is owed (points of
 *   hours the old setting had expired may still be deleted).
 * - Memory holds the range's stamps and rollup versions (no rows), and the rows of one window of
 *   ROWS_WINDOW_HOURS at a time; rollups are put beside the answer, which waits for them at its end
 *   at most KEEP_WAIT_MS.
 */

/** The partition key part of a field: its path, hashed (a payload key may hold any character). */
export const fieldHash = (field: readonly string[]) => createHash('sha256').update(JSON.stringify(field)).digest('base64url').slice(0, 22);

/** Rollups put in one request: BatchWriteItem's 25 items. */
const KEEP_BATCH = 25;
/** Hours of rollups read at once. */
const ROWS_WINDOW_HOURS = 24;
/** How long an answer waits at its end for the rollups it is putting. */
const KEEP_WAIT_MS = 5000;

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
export const rollupEntries = async (
  context: RollupContext,
  range: TimeseriesRange,
  aggregation: Aggregation,
): Promise<AsyncIterable<Array<RangePoint | HourTotals>> | undefined> => {
  const { store, rollups: rollupStore, workspace, now } = context;
  if (range.tags?.length || range.fleets?.length || range.start === undefined) return undefined;
  const start = parseTime(range.start)!;
  const end = range.end === undefined ? undefined : parseTime(range.end)!;
  const firstHour = Math.ceil((start.ms + (start.us ? 1 : 0)) / HOUR_MS) * HOUR_MS;
  const lastHourEnd = floorHour(Math.min(end?.ms ?? Infinity, now - SEALED_AFTER_MS));
  if (firstHour >= lastHourEnd) return undefined;

  const hash = fieldHash(aggregation.field);
  const [stamps, versions] = await Promise.all([
    rollupStore.stampsOfHours(workspace.id, firstHour, lastHourEnd),
    rollupStore.versionsOfField(workspace.id, hash, firstHour, lastHourEnd),
  ]);
  const version = workspace.retention_version ?? 0;
  /** An hour whose stamp is pending may be getting points: it is read from them, and not kept. */
  const settled = (hour: number) => !stamps.get(hour)?.pending;
  const good = (hour: number) => {
    const kept = versions.get(hour);
    return kept !== undefined && settled(hour) && kept.retentionVersion === version && kept.stamp === stamps.get(hour)?.token;
  };
  const withinBucket = (hour: number) => {
    const bucket = aggregation.clock.bucketOf(hour);
    return bucket.start <= hour && bucket.end >= hour + HOUR_MS;
  };
  const devices = range.devices?.length ? new Set(range.devices) : undefined;
  // Only a read of every device sees an hour whole; a re-stamp still owed may yet delete points.
  const keeping = !devices && workspace.retention_owed_from === undefined;
  const days = workspace.data_retention_days ?? undefined;
  /** When a rollup kept now expires at the latest, in seconds (a TTL). */
  const lifetimeEnd = Math.ceil(now / 1000) + ROLLUP_LIFETIME_DAYS * 86_400;

  // Rollups are put one batch after another, beside the answer, which waits for them only at its end, and briefly.
  let putting: Promise<void> = Promise.resolve();
  const keep = (hours: HourBuilder[]) => {
    const rollups = hours.map(
      (built): HourRollup => ({
        hour: built.hour,
        retentionVersion: version,
        rows: built.rowsInOrder(),
        ...(stamps.has(built.hour) ? { stamp: stamps.get(built.hour)!.token } : {}),
        // With the hour's points under a retention, and within the cache's lifetime in any case.
        expires: Math.min(days ? expiresAt(built.hour + HOUR_MS, days, now) : Infinity, lifetimeEnd),
      }),
    );
    putting = putting.then(async () => {
      try {
        const tooLarge = await rollupStore.keepRollups(workspace.id, hash, rollups);
        if (tooLarge.length)
          logger.warn('Rollups too large to keep: these hours are read from their points.', {
            workspace_id: workspace.id,
            hours: tooLarge.map((hour) => new Date(hour).toISOString()),
          });
      } catch (error) {
        // A rollup not kept is read from the points next time: the answer stands.
        logger.warn('Rollups not kept.', { workspace_id: workspace.id, hours: rollups.length, error: error as Error });
      }
    });
  };

  /**
   * The points of [from, to) (ms; undefined: the range's own bound), keeping the rollups of
   * `hours` (sealed, in order, within it), each once a later point or the read's end shows it whole.
   */
  async function* pointsBetween(from: number | undefined, to: number | undefined, hours: number[]): AsyncGenerator<RangePoint[]> {
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
    const closeBefore = (ms: number) => {
      while (next < hours.length && hours[next] + HOUR_MS <= ms) {
        done.push(building?.hour === hours[next] ? building : new HourBuilder(hours[next]));
        building = undefined;
        next++;
      }
      if (done.length >= KEEP_BATCH) keep(done.splice(0));
    };
    try {
      for await (const run of store.readRange(segment)) {
        if (next < hours.length) {
          for (const point of run) {
            if (point.ms >= hours[next] + HOUR_MS) closeBefore(point.ms);
            if (next < hours.length && point.ms >= hours[next]) (building ??= new HourBuilder(hours[next])).add(point, aggregation.field);
          }
        }
        yield run;
      }
      closeBefore(Infinity);
    } finally {
      if (done.length) keep(done);
    }
  }

  /** The rows of the rollups of one window of hours at a time: memory holds a window, whatever the range. */
  let window: { to: number; rollups: Map<number, HourRollup> } | undefined;
  const rowsOf = async (hour: number) => {
    if (!window || hour >= window.to) {
      const to = Math.min(hour + ROWS_WINDOW_HOURS * HOUR_MS, lastHourEnd);
      window = { to, rollups: await rollupStore.rollupsOfField(workspace.id, hash, hour, to) };
    }
    const rollup = window.rollups.get(hour);
    // Replaced since its version was read (or gone): it is read from the points.
    if (!rollup || rollup.retentionVersion !== version || rollup.stamp !== stamps.get(hour)?.token) return undefined;
    return devices ? rollup.rows.filter((row) => devices.has(row.device_id)) : rollup.rows;
  };

  async function* entries(): AsyncGenerator<Array<RangePoint | HourTotals>> {
    try {
      let from: number | undefined;
      let toKeep: number[] = [];
      for (let hour = firstHour; hour < lastHourEnd; hour += HOUR_MS) {
        const rows = good(hour) && withinBucket(hour) ? await rowsOf(hour) : undefined;
        if (!rows) {
          if (keeping && settled(hour) && !good(hour)) toKeep.push(hour);
          continue;
        }
        if ((from ?? start.ms) < hour) yield* pointsBetween(from, hour, toKeep);
        toKeep = [];
        yield [{ hour, rows }];
        from = hour + HOUR_MS;
      }
      if (from === undefined || end === undefined || from < end.ms || end.us > 0) yield* pointsBetween(from, undefined, toKeep);
    } finally {
      // The answer ends once its rollups are put, or after KEEP_WAIT_MS: a throttled put never holds it longer.
      await Promise.race([putting, new Promise((resolve) => setTimeout(resolve, KEEP_WAIT_MS).unref())]);
    }
  }
  return entries();
};
