import type { DeviceEvent, TimeseriesRecord } from './api';

/** Points a sparkline draws at most (the newest of a tag). */
export const SPARK_POINTS = 30;

/** A tag's latest value and its recent numbers, for the device page. */
export interface TagHealth {
  tag: string;
  /** The newest point of the tag. */
  latest: TimeseriesRecord;
  /** The numeric field drawn (`value` for a bare number), or undefined when the tag has none. */
  field?: string;
  /** That field's values, oldest first (at most {@link SPARK_POINTS}). */
  values: number[];
}

/** The first numeric field of a payload (a bare number is `value`), in the payload's own order. */
const numericField = (payload: unknown): string | undefined => {
  if (typeof payload === 'number' && Number.isFinite(payload)) return 'value';
  if (payload && typeof payload === 'object' && !Array.isArray(payload)) {
    for (const [k, v] of Object.entries(payload)) if (typeof v === 'number' && Number.isFinite(v)) return k;
  }
  return undefined;
};

const numberAt = (payload: unknown, field: string): number | undefined => {
  const v = typeof payload === 'number' && field === 'value' ? payload : (payload as Record<string, unknown> | null)?.[field];
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
};

/**
 * The device's tags from its newest points (in any order): each tag's newest point and the recent
 * values of its first numeric field, oldest first. Tags sorted by name.
 */
export const tagHealth = (records: readonly TimeseriesRecord[]): TagHealth[] => {
  const byTag = new Map<string, TimeseriesRecord[]>();
  for (const r of records) byTag.set(r.tag, [...(byTag.get(r.tag) ?? []), r]);
  return [...byTag]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([tag, points]) => {
      const newestFirst = [...points].sort((a, b) => (a.timestamp_device < b.timestamp_device ? 1 : a.timestamp_device > b.timestamp_device ? -1 : 0));
      const latest = newestFirst[0];
      const field = numericField(latest.payload);
      const values =
        field === undefined
          ? []
          : newestFirst
              .slice(0, SPARK_POINTS)
              .map((p) => numberAt(p.payload, field))
              .filter((v): v is number => v !== undefined)
              .reverse();
      return { tag, latest, field, values };
    });
};

/** The `points` of an SVG polyline drawing `values` in a `width` × `height` box (flat in the middle when all are equal). */
export const sparklinePoints = (values: readonly number[], width: number, height: number): string => {
  if (!values.length) return '';
  const min = Math.min(...values);
  const max = Math.max(...values);
  const step = values.length > 1 ? width / (values.length - 1) : 0;
  const y = (v: number) => (max === min ? height / 2 : height - ((v - min) / (max - min)) * height);
  return values.map((v, i) => `${(i * step).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
};

/** A short sentence of what an event says, for the device's timeline. */
export const describeEvent = (event: DeviceEvent): string => {
  const p = (event.payload ?? {}) as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));
  switch (event.type) {
    case 'connection':
      return `Connected${p.device_ip ? ` from ${str(p.device_ip)}` : ''}`;
    case 'disconnection':
      return `Disconnected${p.reason ? ` (${str(p.reason)})` : ''}`;
    case 'job':
      return `Job ${str(p.name ?? '')} ${str(p.status ?? '')}`.replace(/\s+/g, ' ').trim();
    case 'fota': {
      const value = (p.value ?? {}) as Record<string, unknown>;
      return `FOTA ${str(value.firmware_id ?? '')} ${str(value.firmware_version ?? '')}: ${str(p.status ?? '')}${p.message ? ` (${str(p.message)})` : ''}`;
    }
    case 'condition':
      return `Condition ${str(p.tag ?? p.uuid ?? '')} ${str(p.status ?? '')}`;
    case 'status':
      return 'Status requested';
    case 'authorization':
    case 'authentication':
      return `${event.type === 'authorization' ? 'Authorization' : 'Authentication'} refused${p.reason ? `: ${str(p.reason)}` : p.error ? `: ${str(p.error)}` : ''}`;
    default:
      return event.type;
  }
};
