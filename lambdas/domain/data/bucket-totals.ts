import type { BucketClock } from '../../shared/time-buckets';
import type { BucketTotals, RangePoint, RollupRow } from '../../stores/timeseries';

/**
 * Adding up buckets: the totals of each bucket of time (per device, or of every device) of a stream
 * of points oldest first, and of hours whose rollups (`./rollups.ts`) stand for their points.
 */

/** What to aggregate: which value of each point, in which buckets, per device or not. */
export interface Aggregation {
  /** The payload keys of the value; empty: the payload itself. */
  field: string[];
  clock: BucketClock;
  groupByDevice: boolean;
}

/**
 * The number at `field` in a payload, or undefined when there is none there: a missing key, a
 * step through something that is not an object (an array is not addressed by position), or a
 * value that is not a number.
 */
export const valueAt = (payload: unknown, field: readonly string[]): number | undefined => {
  let value = payload;
  for (const key of field) {
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return typeof value === 'number' ? value : undefined;
};

/** What a bucket's and a rollup's rows count: the numbers (how many, their sum, min and max) and the points without one. */
type Counts = Pick<BucketTotals, 'count' | 'sum' | 'min' | 'max' | 'skipped'>;

/** Adds a point's value to totals: a number, or undefined when the point has none there (skipped). */
export const addValue = (totals: Counts, value: number | undefined) => {
  if (value === undefined) {
    totals.skipped++;
    return;
  }
  totals.count++;
  totals.sum += value;
  if (value < totals.min) totals.min = value;
  if (value > totals.max) totals.max = value;
};

/** Adds counts that stand for points (an hour's rollup row) to totals. */
const addCounts = (totals: Counts, counts: Counts) => {
  totals.count += counts.count;
  totals.sum += counts.sum;
  totals.skipped += counts.skipped;
  if (counts.min < totals.min) totals.min = counts.min;
  if (counts.max > totals.max) totals.max = counts.max;
};

/** Orders bucket totals as an answer lists them: by start, then by device. */
export const compareTotals = (a: Pick<BucketTotals, 'start' | 'device_id'>, b: Pick<BucketTotals, 'start' | 'device_id'>) =>
  a.start - b.start || ((a.device_id ?? '') < (b.device_id ?? '') ? -1 : (a.device_id ?? '') > (b.device_id ?? '') ? 1 : 0);

const newTotals = (start: number, device_id?: string): BucketTotals => ({
  start,
  ...(device_id === undefined ? {} : { device_id }),
  count: 0,
  sum: 0,
  min: Infinity,
  max: -Infinity,
  skipped: 0,
});

/** An hour's totals per device, from its rollup (`./rollups.ts`): added whole to the bucket that holds the hour. */
export interface HourTotals {
  hour: number;
  rows: RollupRow[];
}

/**
 * The totals of each bucket (per device with `groupByDevice`) of points read oldest first, and of
 * hours whose rollups stand for their points, given out as each bucket closes, in answer order.
 * Memory holds one bucket (its devices), whatever the number of points; the values are added in
 * the order the points come, as a client adding up the ascending storage query would (a rollup's
 * sums were added so too, per device and hour).
 */
export async function* bucketTotals(
  runs: AsyncIterable<Array<RangePoint | HourTotals>>,
  { field, clock, groupByDevice }: Aggregation,
): AsyncGenerator<BucketTotals[]> {
  let end = -Infinity;
  let start = 0;
  let whole: BucketTotals | undefined;
  const byDevice = new Map<string, BucketTotals>();
  const close = (): BucketTotals[] => {
    if (!groupByDevice) return whole ? [whole] : [];
    const closed = [...byDevice.values()].sort(compareTotals);
    byDevice.clear();
    return closed;
  };
  const totalsOf = (device: string) => {
    if (whole) return whole;
    let totals = byDevice.get(device);
    if (!totals) byDevice.set(device, (totals = newTotals(start, device)));
    return totals;
  };
  for await (const run of runs) {
    let closed: BucketTotals[] = [];
    for (const entry of run) {
      const at = 'rows' in entry ? entry.hour : entry.ms;
      if (at >= end) {
        closed = closed.concat(close());
        ({ start, end } = clock.bucketOf(at));
        whole = groupByDevice ? undefined : newTotals(start);
      }
      if ('rows' in entry) for (const row of entry.rows) addCounts(totalsOf(row.device_id), row);
      else addValue(totalsOf(entry.device_id), valueAt(entry.payload, field));
    }
    if (closed.length) yield closed;
  }
  const last = close();
  if (last.length) yield last;
}
