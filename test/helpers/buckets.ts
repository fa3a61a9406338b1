import { Temporal } from 'temporal-polyfill';
import type { Every } from '../../lambdas/shared/time-buckets';

/**
 * A bucket's start by the definition (docs/storage.md, "Aggregation"), straight from Temporal, one instant
 * at a time: what a client would compute. Days: the zone's start of the (N-day) date, N counted
 * from 1970-01-01. Hours and minutes: the wall clock rounded down to a multiple of `every`, at the
 * instant's offset, or the zone's last change of offset when that is later.
 */
export const bucketStartByDefinition = (ms: number, every: Every, zone: string): number => {
  const zoned = Temporal.Instant.fromEpochMilliseconds(ms).toZonedDateTimeISO(zone);
  if (every.unit === 'd') {
    const days = zoned.toPlainDate().since(new Temporal.PlainDate(1970, 1, 1)).days;
    const first = Math.floor(days / every.amount) * every.amount;
    return new Temporal.PlainDate(1970, 1, 1).add({ days: first }).toZonedDateTime({ timeZone: zone }).epochMilliseconds;
  }
  const minuteOfDay = zoned.hour * 60 + zoned.minute;
  const step = every.unit === 'm' ? every.amount : every.amount * 60;
  const floored = zoned
    .toPlainDate()
    .toPlainDateTime({ hour: 0 })
    .add({ minutes: Math.floor(minuteOfDay / step) * step });
  const wallStart = Date.UTC(floored.year, floored.month - 1, floored.day, floored.hour, floored.minute) - zoned.offsetNanoseconds / 1e6;
  const change = Temporal.Instant.fromEpochMilliseconds(ms + 1)
    .toZonedDateTimeISO(zone)
    .getTimeZoneTransition('previous');
  return Math.max(wallStart, change ? change.epochMilliseconds : -Infinity);
};

/** A stored point as a client reads it from the storage query. */
export interface ReadPoint {
  timestamp_device: string;
  device_id: string;
  payload: unknown;
}

/**
 * What a client computes from the raw points of the ascending storage query: per bucket (and
 * device), the numbers at `field` added in the order read, and the points that had none.
 */
export const clientAggregate = (points: readonly ReadPoint[], every: Every, zone: string, field: readonly string[], groupByDevice: boolean) => {
  const buckets = new Map<string, { start: string; device_id?: string; values: number[] }>();
  let skipped = 0;
  for (const point of points) {
    let value: unknown = point.payload;
    for (const key of field) value = value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>)[key] : undefined;
    if (typeof value !== 'number') {
      skipped++;
      continue;
    }
    const start = new Date(bucketStartByDefinition(Date.parse(point.timestamp_device), every, zone)).toISOString();
    const key = groupByDevice ? `${start}|${point.device_id}` : start;
    const bucket = buckets.get(key) ?? { start, ...(groupByDevice ? { device_id: point.device_id } : {}), values: [] };
    bucket.values.push(value);
    buckets.set(key, bucket);
  }
  const finite = (n: number) => (Number.isFinite(n) ? n : null);
  const sorted = [...buckets.values()].sort((a, b) => a.start.localeCompare(b.start) || (a.device_id ?? '').localeCompare(b.device_id ?? ''));
  const result = sorted.map(({ start, device_id, values }) => {
    const sum = values.reduce((s, v) => s + v, 0);
    return {
      start,
      ...(device_id === undefined ? {} : { device_id }),
      avg: finite(sum / values.length),
      min: Math.min(...values),
      max: Math.max(...values),
      sum: finite(sum),
      count: values.length,
    };
  });
  // What bounds the rounding of a sum added in another order: its values' magnitudes.
  const magnitudes = sorted.map(({ values }) => values.reduce((s, v) => s + Math.abs(v), 0));
  return { buckets: result, skipped, magnitudes };
};

/**
 * Buckets equal to a client's but for the order their sums were added in (rollups add per hour and
 * device): counts, minimums, maximums, starts and devices exactly; sums and averages within what
 * adding the same values in any order may round differently, n·ε·Σ|v| (both null past a double's range).
 */
export const expectBucketsClose = (actual: ReadonlyArray<Record<string, unknown>>, expected: ReturnType<typeof clientAggregate>) => {
  const rounded = (bucket: Record<string, unknown>) => ({ ...bucket, sum: bucket.sum === null ? null : 'number', avg: bucket.avg === null ? null : 'number' });
  expect(actual.map(rounded)).toEqual(expected.buckets.map(rounded));
  expected.buckets.forEach((bucket, i) => {
    const tolerance = bucket.count * Number.EPSILON * expected.magnitudes[i];
    for (const [fn, scale] of [
      ['sum', 1],
      ['avg', bucket.count],
    ] as const) {
      const want = bucket[fn];
      const got = actual[i][fn] as number | null;
      if (want !== null && got !== null && Math.abs(got - want) > tolerance / scale)
        throw new Error(`bucket ${bucket.start} ${bucket.device_id ?? ''}: ${fn} ${got}, expected ${want} within ${tolerance / scale}`);
    }
  });
};
