import * as z from 'zod';
import { DateSchema, DeviceIdRefSchema, DeviceIdSchema, FleetIdRefSchema, FleetIdSchema } from './common';
import { TagSchema } from './device-api';
import { PageQueryShape } from './list';
import { BUCKET_AMOUNTS, canonicalZone, type BucketUnit } from '../shared/time-buckets';
import { compareTime, formatTime, parseTime } from '../shared/timestamps';

/** Largest page of the storage query (the interface's limit). */
export const TIMESERIES_SIZE_MAX = 175_000;
/** Largest page index; with the largest page, offsets stay exact integers. */
export const TIMESERIES_FROM_MAX = 1_000_000_000;
/** Most `device` or `tag` values in one query. */
export const TIMESERIES_FILTER_MAX = 100;

/**
 * A time bound: RFC 3339 with or without an offset, as UTC to the microsecond (cloud stamps have
 * microseconds: shared/timestamps.ts). A finer bound rounds up: `ts >= 10.0000005` holds from
 * 10.000001 on, and `ts < 10.0000005` up to 10.000000.
 */
export const BoundSchema = z.iso
  .datetime({ offset: true })
  // Not a date at all is the format check's to report.
  .refine(
    (date) => Number.isNaN(Date.parse(date)) || (new Date(date).getUTCFullYear() >= 0 && new Date(date).getUTCFullYear() <= 9999),
    'Must be a date in years 0000–9999.',
  )
  .transform((date) => {
    const time = parseTime(date, true);
    return time ? formatTime(time) : date;
  })
  .meta({ description: 'RFC 3339 date, to the microsecond', example: '2021-07-08T14:21:15.915Z' });

/** A non-negative integer written in decimal digits, at most `max`. */
const countSchema = (max: number, what: string) =>
  z
    .string()
    .regex(/^\d{1,12}$/, `Must be a non-negative integer (${what}).`)
    .transform(Number)
    .pipe(z.number().max(max, `Must be at most ${max}.`))
    // The document says what a client sends: an integer within the bounds (the pattern is dropped).
    .meta({ type: 'integer', minimum: 0, maximum: max, description: `Integer from 0 to ${max}: ${what}` });

/**
 * `fleet`: repeatable, the fleets whose points to keep: the fleet a point was stored with (its
 * device's fleet when it arrived). An addition to the v3 query; a fleet not in the workspace is a 404.
 */
export const FleetFilterSchema = z
  .array(FleetIdRefSchema)
  .max(TIMESERIES_FILTER_MAX, `At most ${TIMESERIES_FILTER_MAX} fleets.`)
  .optional()
  .meta({ description: 'Repeatable: only points stored with these fleets (the device’s fleet when the point arrived); a fleet not in the workspace is a 404' });

export const TIMESERIES_SORTS = ['timestamp_device', '-timestamp_device'] as const;

/** Whether `start` is not after `end`, when both are dates (a bound that is not a date is its own field's error). */
export const startNotAfterEnd = (q: { start?: string; end?: string }) => {
  const [start, end] = [q.start === undefined ? undefined : parseTime(q.start), q.end === undefined ? undefined : parseTime(q.end)];
  return !start || !end || compareTime(start, end) <= 0;
};

/**
 * The storage query's parameters, exactly as the interface lists them. A `start` after `end` is
 * a 400 (a range that cannot hold a point is a client's mistake, not an empty page); JSON Schema
 * cannot compare two parameters, so the document says it in words.
 */
export const TimeseriesQuerySchema = z
  .strictObject({
    start: BoundSchema.optional().meta({ description: 'Included lower bound on timestamp_device; must not be after end' }),
    end: BoundSchema.optional().meta({ description: 'Excluded upper bound on timestamp_device; must not be before start' }),
    from: countSchema(TIMESERIES_FROM_MAX, 'page index').default(0),
    size: countSchema(TIMESERIES_SIZE_MAX, 'page size').default(100),
    sort: z.enum(TIMESERIES_SORTS).default('-timestamp_device').meta({ description: '`-` sorts newest first' }),
    device: z.array(DeviceIdRefSchema).max(TIMESERIES_FILTER_MAX, `At most ${TIMESERIES_FILTER_MAX} devices.`).optional().meta({ description: 'Repeatable' }),
    tag: z.array(TagSchema).max(TIMESERIES_FILTER_MAX, `At most ${TIMESERIES_FILTER_MAX} tags.`).optional().meta({ description: 'Repeatable' }),
    fleet: FleetFilterSchema,
  })
  .refine(startNotAfterEnd, { message: 'Must not be after end.', path: ['start'] });
export type TimeseriesQueryParams = z.infer<typeof TimeseriesQuerySchema>;

/** One stored data point, as the storage query returns it. */
export const TimeseriesRecordSchema = z
  .object({
    timestamp_device: DateSchema,
    timestamp_in: DateSchema,
    fleet_id: FleetIdSchema,
    device_id: DeviceIdSchema,
    tag: z.string(),
    payload: z.unknown().meta({ description: 'The JSON payload the device sent' }),
  })
  .meta({ id: 'TimeseriesRecord' });
export type TimeseriesRecord = z.infer<typeof TimeseriesRecordSchema>;

export const TimeseriesResponseSchema = z.object({ result: z.array(TimeseriesRecordSchema) }).meta({
  description: 'Streamed; gzipped when the request sends Accept-Encoding: gzip',
});

/** The aggregation functions, in the order a bucket answers them. */
export const AGGREGATE_FUNCTIONS = ['avg', 'min', 'max', 'sum', 'count'] as const;
export type AggregateFunction = (typeof AGGREGATE_FUNCTIONS)[number];

/** Most buckets one answer holds (spec/operations.md §4); more come in pages. */
export const AGGREGATE_LIMIT_MAX = 10_000;

/** Every accepted `every`: the minutes that tile an hour, the hours that tile a day, 1 to 31 days. */
export const EVERY_VALUES = (Object.entries(BUCKET_AMOUNTS) as Array<[BucketUnit, readonly number[]]>).flatMap(([unit, amounts]) =>
  amounts.map((n) => `${n}${unit}`),
) as [string, ...string[]];

/** A path of payload keys: up to 8 names of letters, digits, "_" or "-", joined by dots. */
export const FIELD_PATH = /^[A-Za-z0-9_-]{1,64}(?:\.[A-Za-z0-9_-]{1,64}){0,7}$/;
const FUNCTION_LIST = new RegExp(`^(?:${AGGREGATE_FUNCTIONS.join('|')})(?:,(?:${AGGREGATE_FUNCTIONS.join('|')}))*$`);

/**
 * The aggregation's parameters: the storage query's filters, then what to compute. Everything is
 * optional, as on the storage query: without `field` the payload itself is the value (a device
 * that publishes bare numbers), `every` is an hour, `tz` UTC, `fn` all five.
 */
export const AggregateQuerySchema = z
  .strictObject({
    start: BoundSchema.optional().meta({ description: 'Included lower bound on timestamp_device; must not be after end' }),
    end: BoundSchema.optional().meta({ description: 'Excluded upper bound on timestamp_device; must not be before start' }),
    device: z.array(DeviceIdRefSchema).max(TIMESERIES_FILTER_MAX, `At most ${TIMESERIES_FILTER_MAX} devices.`).optional().meta({ description: 'Repeatable' }),
    tag: z.array(TagSchema).max(TIMESERIES_FILTER_MAX, `At most ${TIMESERIES_FILTER_MAX} tags.`).optional().meta({ description: 'Repeatable' }),
    fleet: FleetFilterSchema,
    field: z
      .string()
      .regex(FIELD_PATH, 'Must be a path of payload keys: up to 8 names of 1 to 64 letters, digits, "_" or "-", joined by dots (temp, env.temp).')
      .optional()
      .meta({
        description:
          'The numeric payload field to aggregate, by its path of keys (`temp`, `env.temp`); omitted: the payload itself. A point whose field is missing or not a number is counted in `skipped`',
        example: 'env.temp',
      }),
    every: z
      .enum(
        EVERY_VALUES,
        `Must be minutes that divide an hour (${BUCKET_AMOUNTS.m.join(', ')}), hours that divide a day (${BUCKET_AMOUNTS.h.join(', ')}), or 1 to 31 days: 15m, 1h, 1d.`,
      )
      .default('1h')
      .meta({
        description: 'Bucket length: 1m to 31d. Days are calendar days of `tz` (23 or 25 hours across a DST change); minutes and hours follow its wall clock',
      }),
    tz: z
      .string()
      .regex(/^[A-Za-z0-9_+\-/]{1,64}$/, 'Must be an IANA time zone, such as Europe/Rome or UTC.')
      // (on the string itself: zod leaves a transformed schema's examples out of the document)
      .meta({ examples: ['UTC', 'Europe/Rome', 'America/New_York', 'Asia/Kolkata'] })
      .refine((zone) => canonicalZone(zone) !== undefined, 'Must be an IANA time zone, such as Europe/Rome or UTC.')
      .transform((zone) => canonicalZone(zone)!)
      .default('UTC')
      .meta({ description: 'The IANA time zone whose calendar and wall clock place the buckets (default UTC)', example: 'Europe/Rome' }),
    fn: z
      .string()
      .regex(FUNCTION_LIST, `Must be a comma-separated list of ${AGGREGATE_FUNCTIONS.join(', ')}.`)
      .transform((list) => AGGREGATE_FUNCTIONS.filter((f) => list.split(',').includes(f)))
      .default([...AGGREGATE_FUNCTIONS])
      .meta({ description: `Comma-separated: any of ${AGGREGATE_FUNCTIONS.join(', ')} (default all); each bucket answers these`, example: 'avg,min,max' }),
    group_by: z.enum(['device']).optional().meta({ description: '`device`: a bucket per device (with `device_id`) rather than one for all' }),
    limit: z
      .string()
      .regex(/^\d{1,6}$/, `Must be an integer from 1 to ${AGGREGATE_LIMIT_MAX}.`)
      .transform(Number)
      .pipe(z.number().min(1, 'Must be at least 1.').max(AGGREGATE_LIMIT_MAX, `Must be at most ${AGGREGATE_LIMIT_MAX}.`))
      .default(AGGREGATE_LIMIT_MAX)
      .meta({
        type: 'integer',
        minimum: 1,
        maximum: AGGREGATE_LIMIT_MAX,
        description: `Integer from 1 to ${AGGREGATE_LIMIT_MAX} (default): buckets per answer; \`next\` pages on`,
      }),
    cursor: PageQueryShape.cursor,
  })
  .refine(startNotAfterEnd, { message: 'Must not be after end.', path: ['start'] });
export type AggregateQueryParams = z.infer<typeof AggregateQuerySchema>;

/** A finite number, or null for a sum (or average) beyond a double's range. */
const Total = z.number().nullable();

/** One bucket of an aggregation: its start, its device when grouped, and the functions asked for. */
export const AggregateBucketSchema = z
  .object({
    start: DateSchema.meta({ description: 'The bucket’s start (RFC 3339 UTC): the zone’s start of day, or a wall-clock multiple of `every`' }),
    device_id: DeviceIdSchema.optional().meta({ description: 'With group_by=device' }),
    avg: Total.optional(),
    min: z.number().optional(),
    max: z.number().optional(),
    sum: Total.optional().meta({ description: 'null when the sum is beyond a double’s range (±1.8e308)' }),
    count: z.int().min(1).optional().meta({ description: 'Points whose field is a number' }),
  })
  .meta({ id: 'AggregateBucket' });
export type AggregateBucket = z.infer<typeof AggregateBucketSchema>;

export const AggregateResponseSchema = z
  .object({
    buckets: z.array(AggregateBucketSchema).meta({ description: 'Buckets that hold a number, oldest first (by device within one), at most `limit`' }),
    skipped: z.int().min(0).meta({ description: 'Points of these buckets’ time (and devices) whose field is missing or not a number' }),
    next: z.string().nullable().meta({ description: 'The cursor of the next page, or null when this page is the last' }),
  })
  .meta({ description: 'Streamed; gzipped when the request sends Accept-Encoding: gzip' });
