import type { TimeseriesRecord } from './api';

/** One line of the chart: a numeric payload field of one device and tag. */
export interface Series {
  /** `device · tag · field.path` */
  label: string;
  values: Float64Array;
}

/** Columns for the chart: shared x (Unix seconds), one y array per series, NaN where a series has no point. */
export interface ChartData {
  x: Float64Array;
  series: Series[];
  /** Points drawn (non-NaN y values). */
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

/**
 * Chart columns from records in any order: sorted by device time, one series per (device, tag,
 * numeric field), at most {@link MAX_SERIES} (the first ones met). Records at the same time share
 * an x, so each series keeps its own points.
 */
export const extractSeries = (records: readonly TimeseriesRecord[], maxSeries = MAX_SERIES): ChartData & { dropped: number } => {
  const times = new Float64Array(records.length);
  for (let i = 0; i < records.length; i++) times[i] = Date.parse(records[i].timestamp_device) / 1000;
  const order = Array.from(times.keys()).sort((a, b) => times[a] - times[b] || a - b);
  // distinct x values, in order
  const xs: number[] = [];
  const slot = new Int32Array(records.length);
  for (const i of order) {
    if (!xs.length || xs[xs.length - 1] !== times[i]) xs.push(times[i]);
    slot[i] = xs.length - 1;
  }
  const byLabel = new Map<string, Float64Array>();
  const dropped = new Set<string>();
  let points = 0;
  for (const i of order) {
    const record = records[i];
    for (const [field, value] of numericFields(record.payload)) {
      const label = `${record.device_id} · ${record.tag} · ${field}`;
      let values = byLabel.get(label);
      if (!values) {
        if (byLabel.size >= maxSeries) {
          dropped.add(label);
          continue;
        }
        values = new Float64Array(xs.length).fill(Number.NaN);
        byLabel.set(label, values);
      }
      if (Number.isNaN(values[slot[i]])) points++;
      values[slot[i]] = value;
    }
  }
  return { x: Float64Array.from(xs), series: [...byLabel].map(([label, values]) => ({ label, values })), points, dropped: dropped.size };
};
