import type { AggregateBucket } from './api';
import type { ChartData, Series } from './chart';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** The bucket lengths the API takes (`every`), shortest first, with their length in ms (a day as 24 h: for choosing only). */
export const EVERY_CHOICES: ReadonlyArray<{ every: string; ms: number }> = [
  ...[1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30].map((n) => ({ every: `${n}m`, ms: n * MINUTE })),
  ...[1, 2, 3, 4, 6, 8, 12].map((n) => ({ every: `${n}h`, ms: n * HOUR })),
  ...Array.from({ length: 31 }, (_, i) => ({ every: `${i + 1}d`, ms: (i + 1) * DAY })),
];

/** Buckets a chart line should have at most: about a point per pixel column of a wide chart. */
export const BUCKETS_PER_LINE = 1000;

/**
 * The shortest `every` that cuts a range into at most BUCKETS_PER_LINE buckets: a day draws in
 * 2-minute buckets, a week in 12 minutes, a month in hours, a year in 12 hours. With `lines`
 * lines in one answer (a bucket per device), it stays within the API's 10,000 buckets an answer
 * too, so that a month of ten devices draws in one request.
 */
export const everyFor = (rangeMs: number, lines = 1): string => {
  const perLine = Math.min(BUCKETS_PER_LINE, Math.floor(10_000 / Math.max(1, lines)));
  return (EVERY_CHOICES.find((c) => rangeMs / c.ms <= perLine) ?? EVERY_CHOICES[EVERY_CHOICES.length - 1]).every;
};

/** An aggregation's buckets as chart columns: one line per device of the average of each bucket (null where it has none). */
export const aggregateChart = (buckets: readonly AggregateBucket[], tag: string, field: string): ChartData => {
  const starts = [...new Set(buckets.map((b) => b.start))].sort();
  const slot = new Map(starts.map((s, i) => [s, i]));
  const byDevice = new Map<string, Series>();
  let points = 0;
  for (const bucket of buckets) {
    const deviceId = bucket.device_id ?? 'all devices';
    let series = byDevice.get(deviceId);
    if (!series)
      byDevice.set(deviceId, (series = { deviceId, fleetId: '', tag, field, values: new Array<number | null>(starts.length).fill(null), points: 0 }));
    if (bucket.avg === undefined || bucket.avg === null) continue;
    series.values[slot.get(bucket.start)!] = bucket.avg;
    series.points++;
    points++;
  }
  return { x: Float64Array.from(starts.map((s) => Date.parse(s) / 1000)), series: [...byDevice.values()], points };
};
