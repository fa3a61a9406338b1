import * as z from 'zod';
import { DateSchema, DeviceIdRefSchema, DeviceIdSchema, FleetIdRefSchema, FleetIdSchema } from './common';
import { TagSchema } from './device-api';
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
const BoundSchema = z.iso
  .datetime({ offset: true })
  // Not a date at all is the format check's to report.
  .refine((date) => Number.isNaN(Date.parse(date)) || (new Date(date).getUTCFullYear() >= 0 && new Date(date).getUTCFullYear() <= 9999), 'Must be a date in years 0000–9999.')
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
  // Both are UTC with milliseconds after the transform, so they compare as strings.
  .refine(
    (q) => {
      // A bound that is not a date at all is its own field's error.
      const [start, end] = [q.start === undefined ? undefined : parseTime(q.start), q.end === undefined ? undefined : parseTime(q.end)];
      return !start || !end || compareTime(start, end) <= 0;
    },
    { message: 'Must not be after end.', path: ['start'] },
  );
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
