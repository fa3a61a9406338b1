/**
 * Timestamps to the microsecond (DESIGN §5). A device's own `timestamp_device` is kept to the
 * millisecond, as the interface has it; a point that comes without one gets a **cloud stamp**: its
 * arrival to the microsecond, made unique per device (see {@link CloudStamper}). A cloud stamp's
 * sub-millisecond digits are never `000`, so it can never equal a device's own time, and it prints
 * with six fractional digits (`2026-11-25T10:00:00.123456Z`); every other time prints as before
 * (`2026-11-25T10:00:00.123Z`).
 */

/**
 * An instant to the microsecond: milliseconds since the epoch and the microseconds within that
 * millisecond (0–999). Two numbers, because one Number holds microseconds exactly only within
 * about 285 years of 1970, and stored times span years 0000–9999.
 */
export interface Time {
  ms: number;
  us: number;
}

/** Microseconds since the epoch, for times near now (the stamper's arithmetic). */
export type Micros = number;

const RFC3339 = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/i;

/**
 * The instant of an RFC 3339 date (any offset), or undefined when it is not one. Digits finer than
 * a microsecond round up when `roundUp` is set (a bound then selects exactly the microseconds it
 * names), else they are dropped.
 */
export const parseTime = (value: string, roundUp = false): Time | undefined => {
  const match = RFC3339.exec(value);
  if (!match) return undefined;
  const [, seconds, fraction = '', zone] = match;
  const secondMs = Date.parse(`${seconds}${zone.toUpperCase()}`);
  if (Number.isNaN(secondMs)) return undefined;
  const micros = Number(fraction.slice(0, 6).padEnd(6, '0')) + (roundUp && /[1-9]/.test(fraction.slice(6)) ? 1 : 0);
  return { ms: secondMs + Math.floor(micros / 1000), us: micros % 1000 };
};

/** Earlier (< 0), same (0) or later (> 0). */
export const compareTime = (a: Time, b: Time) => a.ms - b.ms || a.us - b.us;

/** Microseconds from `a` to `b` (exact while they are within 285 years of each other). */
export const microsBetween = (a: Time, b: Time) => (b.ms - a.ms) * 1000 + (b.us - a.us);

/** `t` moved by `micros`. */
export const addMicros = (t: Time, micros: number): Time => {
  const us = t.us + micros;
  return { ms: t.ms + Math.floor(us / 1000), us: ((us % 1000) + 1000) % 1000 };
};

/** Whether a time has digits below the millisecond: only cloud stamps do. */
export const isCloudStamp = (t: Time) => t.us !== 0;

/** RFC 3339 UTC: three fractional digits for a whole millisecond, six for a cloud stamp. */
export const formatTime = ({ ms, us }: Time): string => {
  const iso = new Date(ms).toISOString();
  return us === 0 ? iso : `${iso.slice(0, -1)}${String(us).padStart(3, '0')}Z`;
};

/** The instant of microseconds since the epoch. */
export const timeOfMicros = (micros: Micros): Time => {
  const ms = Math.floor(micros / 1000);
  return { ms, us: micros - ms * 1000 };
};

/** Microseconds since the epoch as {@link formatTime} prints them. */
export const formatMicros = (micros: Micros): string => formatTime(timeOfMicros(micros));

/** The wall clock to the microsecond (performance's origin plus its monotonic offset). */
export const nowMicros = (): Micros => Math.floor((performance.timeOrigin + performance.now()) * 1000);

/** (device, millisecond) pairs a stamper remembers; the longest unused forgotten first. About 100 bytes each. */
const STAMPER_ENTRIES_MAX = 100_000;

/**
 * Hands out cloud stamps: per device and millisecond, each stamp is later than the one before and
 * not earlier than the arrival it is asked for, and its sub-millisecond digits are never `000`.
 * Points stamped by one stamper therefore never share a stamp, however many arrive in one
 * millisecond, and stay in the millisecond they arrived in, whatever order their batches are
 * handled in (past 999 points of one device in one millisecond they run into the next). Within a
 * millisecond they are in the order they were stamped.
 *
 * A stamper lives in one Lambda container. Two containers can give the same stamp to points of one
 * device only when both handle it in the same millisecond; the stores keep both points (a
 * cloud-stamped point is identified by its origin, `PointToStore.origin`), so nothing is lost
 * even then.
 */
export class CloudStamper {
  private readonly last = new Map<string, Micros>();

  constructor(private readonly maxEntries = STAMPER_ENTRIES_MAX) {}

  /** The next stamp of `deviceId` at or after `notBefore`, in its millisecond unless that is full. */
  next(deviceId: string, notBefore: Micros): Micros {
    const key = `${deviceId}\n${Math.floor(notBefore / 1000)}`;
    const previous = this.last.get(key);
    let stamp = previous === undefined || previous < notBefore ? notBefore : previous + 1;
    if (stamp % 1000 === 0) stamp += 1;
    this.last.delete(key);
    this.last.set(key, stamp);
    if (this.last.size > this.maxEntries) this.last.delete(this.last.keys().next().value as string);
    return stamp;
  }
}
