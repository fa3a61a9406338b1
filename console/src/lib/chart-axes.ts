import type { Series } from './chart';

/**
 * The chart's y axes. A payload field is the nearest thing to a unit a point carries (`temp`,
 * `humidity`, `uptime_s`), so each field gets an axis of its own: a counter in the hundreds no
 * longer flattens a percentage, and the series of one field (one per device) share one axis and
 * compare. At most MAX_AXES axes (two a side): beyond them a field joins the axis whose values are
 * nearest its own in order of magnitude.
 */
export const MAX_AXES = 4;

export interface AxisGroup {
  /** uPlot's scale key: `y0`, `y1`, … */
  scale: string;
  /** The fields drawn on it. */
  fields: string[];
  /** Its series' indexes. */
  series: number[];
  /** The largest absolute value of its series (0 without any). */
  magnitude: number;
}

/** Min, max and mean of a series' points, and how many. */
export interface SeriesStats {
  min: number;
  max: number;
  mean: number;
  count: number;
}

/** The stats of a series' values (nulls left out); NaN for a series without points. */
export const seriesStats = (values: readonly (number | null)[]): SeriesStats => {
  let min = Infinity;
  let max = -Infinity;
  let sum = 0;
  let count = 0;
  for (const v of values) {
    if (v === null) continue;
    if (v < min) min = v;
    if (v > max) max = v;
    sum += v;
    count++;
  }
  return count ? { min, max, mean: sum / count, count } : { min: Number.NaN, max: Number.NaN, mean: Number.NaN, count: 0 };
};

const magnitudeOf = (values: readonly (number | null)[]) => {
  let m = 0;
  for (const v of values) if (v !== null && Math.abs(v) > m) m = Math.abs(v);
  return m;
};

/** How far apart two magnitudes are, in orders of magnitude (0 when either is 0). */
const distance = (a: number, b: number) => (a > 0 && b > 0 ? Math.abs(Math.log10(a / b)) : 0);

/**
 * The axes of a chart's series: one per field, in the order fields are first met; with more fields
 * than `maxAxes`, the extra ones (the fields met last) join the axis nearest in magnitude.
 */
export const axisGroups = (series: readonly Pick<Series, 'field' | 'values'>[], maxAxes = MAX_AXES): { groups: AxisGroup[]; axisOf: number[] } => {
  const byField = new Map<string, { series: number[]; magnitude: number }>();
  series.forEach((s, i) => {
    const entry = byField.get(s.field) ?? { series: [], magnitude: 0 };
    entry.series.push(i);
    entry.magnitude = Math.max(entry.magnitude, magnitudeOf(s.values));
    byField.set(s.field, entry);
  });
  const groups: AxisGroup[] = [];
  for (const [field, { series: members, magnitude }] of byField) {
    if (groups.length < maxAxes) {
      groups.push({ scale: `y${groups.length}`, fields: [field], series: [...members], magnitude });
      continue;
    }
    const nearest = groups.reduce((best, g) => (distance(g.magnitude, magnitude) < distance(best.magnitude, magnitude) ? g : best));
    nearest.fields.push(field);
    nearest.series.push(...members);
    nearest.magnitude = Math.max(nearest.magnitude, magnitude);
  }
  const axisOf = new Array<number>(series.length);
  groups.forEach((g, k) => {
    for (const i of g.series) axisOf[i] = k;
  });
  return { groups, axisOf };
};

/** The indexes (into x) where a series has a point, in order. */
export const pointIndexes = (values: readonly (number | null)[]): Int32Array => {
  let n = 0;
  for (const v of values) if (v !== null) n++;
  const at = new Int32Array(n);
  let k = 0;
  values.forEach((v, i) => {
    if (v !== null) at[k++] = i;
  });
  return at;
};

/**
 * The index of the series' point nearest in time to x[idx] (its own when it has one there), or -1
 * for a series without points: the legend shows every series at the hovered time, not blanks for
 * the series that have no point at exactly that x.
 */
export const nearestPoint = (points: Int32Array, x: ArrayLike<number>, idx: number): number => {
  if (!points.length) return -1;
  let lo = 0;
  let hi = points.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (points[mid] < idx) lo = mid + 1;
    else hi = mid;
  }
  // points[lo] is the first at or after idx (or the last point)
  const after = points[lo];
  if (after === idx || lo === 0) return after;
  const before = points[lo - 1];
  if (after < idx) return after;
  return x[idx] - x[before] <= x[after] - x[idx] ? before : after;
};

/** A gap is a stretch between two points of a series longer than this many times its usual spacing. */
export const GAP_FACTOR = 5;

/**
 * The time (in x units) past which a series' line breaks: GAP_FACTOR times the median spacing of its
 * points; Infinity for fewer than 3 points (nothing to judge a gap by).
 */
export const gapThreshold = (points: Int32Array, x: ArrayLike<number>): number => {
  if (points.length < 3) return Number.POSITIVE_INFINITY;
  const steps = new Float64Array(points.length - 1);
  for (let k = 1; k < points.length; k++) steps[k - 1] = x[points[k]] - x[points[k - 1]];
  steps.sort();
  const median = steps[steps.length >> 1];
  return median > 0 ? median * GAP_FACTOR : Number.POSITIVE_INFINITY;
};

/**
 * The gaps of a series between the x indexes idx0 and idx1: each pair of its consecutive points
 * further apart than `threshold`, as [x before, x after]. The other series' x values in between are
 * no gap (the line joins its own points across them).
 */
export const seriesGaps = (points: Int32Array, x: ArrayLike<number>, threshold: number, idx0 = 0, idx1 = x.length - 1): [number, number][] => {
  const gaps: [number, number][] = [];
  if (!Number.isFinite(threshold)) return gaps;
  for (let k = 1; k < points.length; k++) {
    const a = points[k - 1];
    const b = points[k];
    if (b < idx0 || a > idx1) continue;
    if (x[b] - x[a] > threshold) gaps.push([x[a], x[b]]);
  }
  return gaps;
};

/** A number for the legend: 4 significant digits, no exponent below 1e6. */
export const formatValue = (v: number) =>
  Number.isNaN(v) ? '—' : Math.abs(v) >= 1e6 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(3) : String(Number(v.toPrecision(4)));
