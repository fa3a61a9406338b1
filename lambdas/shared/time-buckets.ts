/**
 * Calendar buckets of time in a time zone (the aggregation's `every` and `tz`), computed with
 * Temporal (the TC39 proposal, through temporal-polyfill), never as fixed 24-hour days:
 *
 * - `d` (1–31 days): calendar days of the zone. A day bucket starts at the zone's start of that day
 *   and lasts until the next one: 23 hours on a spring-forward day, 25 on a fall-back day (and 24
 *   minus or plus whatever other transitions take). Several days count from 1970-01-01 in the zone,
 *   as Timestream's `bin()` counts from the epoch: `7d` buckets start on Thursdays.
 * - `m` and `h` (a divisor of an hour or of a day): the zone's wall clock, rounded down to a
 *   multiple of `every` counted from midnight, in the UTC offset the zone has at that moment; a
 *   change of offset (DST) also starts a bucket. Every bucket is thus a stretch of the wall clock at
 *   one offset. A spring-forward day has 23 hourly buckets and a fall-back day 25 (the repeated hour
 *   twice, at each offset); a 2-hour bucket whose start the clock skips starts when it jumps past
 *   it (one hour long); a 12-hour bucket over a fall-back is two, of 3 and 10 hours. In a zone 30
 *   or 45 minutes off UTC, hourly buckets start at :30 or :15 UTC, as its clock shows whole hours.
 */
import { Temporal } from 'temporal-polyfill';

export type BucketUnit = 'm' | 'h' | 'd';

/** A bucket length: `amount` minutes, hours or days. */
export interface Every {
  amount: number;
  unit: BucketUnit;
}

/** The lengths a bucket may have, per unit: those that tile an hour (minutes) or a day (hours), and 1 to 31 days. */
export const BUCKET_AMOUNTS: Readonly<Record<BucketUnit, readonly number[]>> = {
  m: [1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30],
  h: [1, 2, 3, 4, 6, 8, 12],
  d: Array.from({ length: 31 }, (_, i) => i + 1),
};

const UNIT_MS: Readonly<Record<BucketUnit, number>> = { m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `15m`, `1h`, `7d` as a bucket length, or undefined when it is not one of {@link BUCKET_AMOUNTS}. */
export const parseEvery = (text: string): Every | undefined => {
  const match = /^([1-9]\d?)([mhd])$/.exec(text);
  if (!match) return undefined;
  const every = { amount: Number(match[1]), unit: match[2] as BucketUnit };
  return BUCKET_AMOUNTS[every.unit].includes(every.amount) ? every : undefined;
};

/** The canonical ID of a time zone (an IANA name such as `Europe/Rome`, or `UTC`), or undefined when Temporal knows none by that name. */
export const canonicalZone = (zone: string): string | undefined => {
  try {
    return Temporal.Instant.fromEpochMilliseconds(0).toZonedDateTimeISO(zone).timeZoneId;
  } catch {
    return undefined;
  }
};

/**
 * The zone's UTC offset in minutes if it is the same throughout every bucket of `every` that holds
 * an instant of [start, end) (from a bucket's length, plus an hour, before `start`: the first
 * bucket may begin there), or undefined when it changes there (a DST transition) or the range is
 * unbounded and the zone has transitions: where buckets are a fixed grid of UTC, which a store can
 * compute.
 */
export const constantOffsetMinutes = (zone: string, every: Every, startMs: number, endMs: number | undefined): number | undefined => {
  const from = Temporal.Instant.fromEpochMilliseconds(startMs - every.amount * UNIT_MS[every.unit] - UNIT_MS.h).toZonedDateTimeISO(zone);
  const next = from.getTimeZoneTransition('next');
  if (next && (endMs === undefined || next.epochMilliseconds < endMs)) return undefined;
  return from.offsetNanoseconds / 60e9;
};

/** Days from 1970-01-01 to a calendar date. */
const epochDayOf = (date: Temporal.PlainDate) => Date.UTC(date.year, date.month - 1, date.day) / 86_400_000;
const dateOfEpochDay = (day: number) => {
  const utc = new Date(day * 86_400_000);
  return new Temporal.PlainDate(utc.getUTCFullYear(), utc.getUTCMonth() + 1, utc.getUTCDate());
};

/** A bucket: its start and end, milliseconds since the epoch, the end excluded. */
export interface Bucket {
  start: number;
  end: number;
}

/**
 * The buckets of one `every` in one zone. Points come mostly in time order, so the last bucket is
 * kept and a point within it costs two comparisons; a sub-day bucket is arithmetic on the offset of
 * the stretch between two transitions (two Temporal calls a stretch), a day bucket two Temporal calls.
 */
/** A stretch of time in which the zone's UTC offset does not change: [from, to), ms. */
interface Segment {
  from: number;
  to: number;
  offsetMs: number;
}

export class BucketClock {
  private current: Bucket | undefined;
  private segment: Segment | undefined;
  private readonly length: number;

  constructor(
    readonly every: Every,
    readonly zone: string,
  ) {
    this.length = every.amount * UNIT_MS[every.unit];
  }

  /** The bucket that holds the instant `ms`. */
  bucketOf(ms: number): Bucket {
    const current = this.current;
    if (current && ms >= current.start && ms < current.end) return current;
    const next = this.every.unit === 'd' ? this.dayBucket(ms) : this.clockBucket(ms);
    this.current = next;
    return next;
  }

  /** The stretch of constant offset that holds `ms`: its transitions from Temporal, then kept while instants stay in it. */
  private segmentOf(ms: number): Segment {
    const known = this.segment;
    if (known && ms >= known.from && ms < known.to) return known;
    // The latest transition at or before `ms` is the latest strictly before the next millisecond.
    const zoned = Temporal.Instant.fromEpochMilliseconds(ms).toZonedDateTimeISO(this.zone);
    const previous = Temporal.Instant.fromEpochMilliseconds(ms + 1)
      .toZonedDateTimeISO(this.zone)
      .getTimeZoneTransition('previous');
    const next = zoned.getTimeZoneTransition('next');
    this.segment = {
      from: previous ? previous.epochMilliseconds : -Infinity,
      to: next ? next.epochMilliseconds : Infinity,
      offsetMs: zoned.offsetNanoseconds / 1e6,
    };
    return this.segment;
  }

  /**
   * A sub-day bucket: the wall clock's multiple of the length at or before `ms`, at the offset of
   * `ms`, or the change of offset when that came later; until the next multiple, or the next change.
   */
  private clockBucket(ms: number): Bucket {
    const { from, to, offsetMs } = this.segmentOf(ms);
    // Local midnights are whole days from the epoch, and the length divides a day: a multiple of
    // the length counted from the epoch is one counted from midnight.
    const wall = Math.floor((ms + offsetMs) / this.length) * this.length;
    return { start: Math.max(wall - offsetMs, from), end: Math.min(wall + this.length - offsetMs, to) };
  }

  private dayBucket(ms: number): Bucket {
    const date = Temporal.Instant.fromEpochMilliseconds(ms).toZonedDateTimeISO(this.zone).toPlainDate();
    const first = Math.floor(epochDayOf(date) / this.every.amount) * this.every.amount;
    const startOf = (day: number) => dateOfEpochDay(day).toZonedDateTime({ timeZone: this.zone }).epochMilliseconds;
    return { start: startOf(first), end: startOf(first + this.every.amount) };
  }
}
