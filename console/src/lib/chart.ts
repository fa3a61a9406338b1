import type { TimeseriesRecord } from './api';
import { formatTime } from './time';

/** One line of the chart: a numeric payload field of one device and tag. */
export interface Series {
  deviceId: string;
  /** The fleet of the device's first point here (the fleet it was in when it sent the point). */
  fleetId: string;
  tag: string;
  /** The field's dotted path in the payload. */
  field: string;
  /**
   * One value per x; `null` where the series has no point. uPlot takes `null` for a gap and, with
   * `spanGaps`, joins the points either side of it (NaN would become its y-scale and draw nothing).
   */
  values: (number | null)[];
  /** Its points (non-null values). */
  points: number;
}

/** Columns for the chart: shared x (Unix seconds, to the microsecond), one y array per series. */
export interface ChartData {
  x: Float64Array;
  series: Series[];
  /** Points drawn (non-null y values). */
  points: number;
}

/** At most this many lines: beyond it a chart is unreadable and the legend too long. */
export const MAX_SERIES = 24;

/** Numeric leaves of a payload, by dotted path (`a.b`, `list.0`); a bare number is the field `value`. */
export const numericFields = (payload: unknown, prefix = '', out: [string, number][] = [], depth = 0): [string, number][] => {
  if (typeof payload === 'number' && Number.isFinite(payload)) out.push([prefix || 'value', payload]);
  else if (payload && typeof payload === 'object' && depth < 8) {
    for (const [key, value] of Object.entries(payload as Record<string, unknown>)) numericFields(value, prefix ? `${prefix}.${key}` : key, out, depth + 1);
  }
  return out;
};

const RFC3339 = /^(\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d:\d\d)(?:[.,](\d+))?([Zz]|[+-]\d\d:\d\d)$/;
const digit = (text: string, at: number) => text.charCodeAt(at) - 48;
const isDigit = (text: string, at: number) => text.charCodeAt(at) >= 48 && text.charCodeAt(at) <= 57;

/**
 * A parser of RFC 3339 times into Unix seconds with the fraction kept to the microsecond (`Date.parse`
 * stops at the millisecond, which would put two points of one millisecond on one x); NaN for what
 * is not such a time. The API's own form (`…T10:00:00.123456Z`, UTC) is read by hand, reusing the
 * hour it last saw: a page of 175,000 points is read in a third of `Date.parse`'s time.
 */
export const timestampParser = () => {
  let hourText = '';
  let hourSeconds = Number.NaN;
  const slow = (text: string) => {
    const match = RFC3339.exec(text);
    if (!match) return Number.NaN;
    const whole = Date.parse(`${match[1].slice(0, 10)}T${match[1].slice(11)}${match[3].toUpperCase()}`) / 1000;
    return match[2] ? whole + Number(`0.${match[2].slice(0, 6)}`) : whole;
  };
  return (text: string): number => {
    const end = text.length - 1;
    // YYYY-MM-DDTHH:MM:SS[.f…]Z
    if (end < 19 || text.charCodeAt(end) !== 90 || text.charCodeAt(10) !== 84 || text.charCodeAt(13) !== 58 || text.charCodeAt(16) !== 58) return slow(text);
    if (!isDigit(text, 14) || !isDigit(text, 15) || !isDigit(text, 17) || !isDigit(text, 18)) return slow(text);
    let fraction = 0;
    if (end > 19) {
      if (text.charCodeAt(19) !== 46 || end === 20) return slow(text);
      let scale = 1;
      for (let at = 20; at < end; at++) {
        if (!isDigit(text, at)) return slow(text);
        // digits past the microsecond are dropped (a double holds no more at today's seconds)
        if (scale < 1e6) {
          fraction = fraction * 10 + digit(text, at);
          scale *= 10;
        }
      }
      fraction /= scale;
    }
    const hour = text.slice(0, 13);
    if (hour !== hourText) {
      hourText = hour;
      hourSeconds = Date.parse(`${hour}:00:00Z`) / 1000;
    }
    const minutes = digit(text, 14) * 10 + digit(text, 15);
    const seconds = digit(text, 17) * 10 + digit(text, 18);
    if (minutes > 59 || seconds > 59) return slow(text);
    return hourSeconds + minutes * 60 + seconds + fraction;
  };
};

/** Unix seconds, to the microsecond, of an RFC 3339 time; NaN for what is not one. */
export const parseTimestamp = (text: string) => timestampParser()(text);

/**
 * Chart columns from records in any order: sorted by device time (to the microsecond), one series
 * per (device, tag, numeric field), at most {@link MAX_SERIES} (the first ones met). Records at the
 * same time share an x, so each series keeps its own points; a record whose time cannot be read is
 * left out.
 */
export const extractSeries = (records: readonly TimeseriesRecord[], maxSeries = MAX_SERIES): ChartData & { dropped: number } => {
  const parse = timestampParser();
  const times = new Float64Array(records.length);
  const kept: number[] = [];
  for (let i = 0; i < records.length; i++) {
    times[i] = parse(records[i].timestamp_device);
    if (!Number.isNaN(times[i])) kept.push(i);
  }
  const order = kept.sort((a, b) => times[a] - times[b] || a - b);
  // distinct x values, in order
  const xs: number[] = [];
  const slot = new Int32Array(records.length);
  for (const i of order) {
    if (!xs.length || xs[xs.length - 1] !== times[i]) xs.push(times[i]);
    slot[i] = xs.length - 1;
  }
  const byKey = new Map<string, Series>();
  const dropped = new Set<string>();
  let points = 0;
  for (const i of order) {
    const record = records[i];
    for (const [field, value] of numericFields(record.payload)) {
      const key = `${record.device_id}\n${record.tag}\n${field}`;
      let series = byKey.get(key);
      if (!series) {
        if (byKey.size >= maxSeries) {
          dropped.add(key);
          continue;
        }
        series = {
          deviceId: record.device_id,
          fleetId: record.fleet_id,
          tag: record.tag,
          field,
          values: new Array<number | null>(xs.length).fill(null),
          points: 0,
        };
        byKey.set(key, series);
      }
      if (series.values[slot[i]] === null) {
        series.points++;
        points++;
      }
      series.values[slot[i]] = value;
    }
  }
  return { x: Float64Array.from(xs), series: [...byKey.values()], points, dropped: dropped.size };
};

/** What the legend says of a series, and the tooltip that names its device fully. */
export interface SeriesLabel {
  /** `name · tag · field`; the device ID stands in for an unknown name, and follows a name two charted devices share. */
  label: string;
  /** `Device name (ID), tag …, field …` */
  title: string;
}

/** How many characters of a device's name a legend label keeps (names take 128): the tag and field after it stay in view. */
export const LEGEND_NAME_CHARS = 40;

/** A name cut to `max` characters, its end an ellipsis when cut. */
export const shortName = (name: string, max = LEGEND_NAME_CHARS) => (name.length > max ? `${name.slice(0, max - 1)}…` : name);

/** Legend labels of the series, by device name (`names`: device ID → name) where it is known, a long name cut (the tooltip says it whole). */
export const seriesLabels = (series: readonly Series[], names: ReadonlyMap<string, string>): SeriesLabel[] => {
  const devicesByName = new Map<string, Set<string>>();
  for (const { deviceId } of series) {
    const name = names.get(deviceId);
    if (name) devicesByName.set(name, (devicesByName.get(name) ?? new Set()).add(deviceId));
  }
  return series.map(({ deviceId, tag, field }) => {
    const name = names.get(deviceId);
    const device = !name ? deviceId : devicesByName.get(name)!.size > 1 ? `${shortName(name)} (${deviceId})` : shortName(name);
    return { label: `${device} · ${tag} · ${field}`, title: `Device ${name ? `${name} (${deviceId})` : deviceId}, tag ${tag}, field ${field}` };
  });
};

/**
 * A chart x (Unix seconds, to the microsecond) for the legend, in `zone` with its abbreviation:
 * `2026-11-25 11:00:00.123 CST`, with six fractional digits when the time has microseconds.
 */
export const formatChartTime = (x: number, zone: string) => {
  const micros = Math.round(x * 1e6);
  const millis = Math.floor(micros / 1000);
  return formatTime(millis, zone, micros - millis * 1000 ? { fraction: 6, micros } : { fraction: 3 });
};
