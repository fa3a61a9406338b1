import type { ExportFormat } from '../../schemas/export';
import { formatTime } from '../../shared/timestamps';
import type { RangePoint } from '../../stores/timeseries';
import type { PointNames } from './export-names';

/** What a file of each format is called and served as. */
export const EXPORT_FILES: Readonly<Record<ExportFormat, { extension: string; contentType: string }>> = {
  // https://www.rfc-editor.org/rfc/rfc4180#section-3
  csv: { extension: 'csv', contentType: 'text/csv; charset=utf-8' },
  ndjson: { extension: 'ndjson', contentType: 'application/x-ndjson' },
};

/** The CSV columns, in order (spec/operations.md §4). */
export const CSV_COLUMNS = ['device_id', 'fleet_id', 'tag', 'timestamp_device', 'timestamp_in', 'payload'] as const;

/**
 * A CSV field as RFC 4180 §2 writes it: enclosed in double quotes when it holds a comma, a double
 * quote, CR or LF, each double quote inside doubled; as it is otherwise.
 */
export const csvField = (text: string) => (/[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text);

/** The CSV columns of an export asked with `names`: those of CSV_COLUMNS, then the names (existing columns keep their places). */
export const CSV_NAMED_COLUMNS = [...CSV_COLUMNS, 'device_name', 'fleet_name'] as const;

/**
 * What a file starts with: the CSV header line (records end in CRLF, as RFC 4180 has them), with
 * the name columns when the export has `names`; nothing for NDJSON.
 */
export const exportHeader = (format: ExportFormat, names = false) => (format === 'csv' ? `${(names ? CSV_NAMED_COLUMNS : CSV_COLUMNS).join(',')}\r\n` : '');

/** RFC 3339 of a time, the last one remembered: a range's points come a millisecond at a time. */
const lastTime = () => {
  let ms = NaN;
  let us = NaN;
  let text = '';
  return (atMs: number, atUs: number) => {
    if (atMs !== ms || atUs !== us) {
      ms = atMs;
      us = atUs;
      text = formatTime({ ms, us });
    }
    return text;
  };
};

/**
 * A point as a line of the file: its times printed as the storage query prints them, the payload
 * as its JSON text. CSV: the columns of CSV_COLUMNS; NDJSON: the storage query's record, its
 * fields in the query's order, and a line feed. With `names` (an export asked with names), the
 * point's names follow: CSV the columns device_name and fleet_name (empty for a device or fleet
 * deleted since), NDJSON the fields device_name and fleet_name after payload (null then); without
 * it a line is exactly what it was before the option existed.
 */
export const lineFormatter = (format: ExportFormat, names?: (p: RangePoint) => PointNames) => {
  const deviceTime = lastTime();
  const arrival = lastTime();
  if (format === 'csv') {
    const line = (p: RangePoint) =>
      `${csvField(p.device_id)},${csvField(p.fleet_id)},${csvField(p.tag)},${deviceTime(p.ms, p.us)},${arrival(p.inMs, 0)},${csvField(JSON.stringify(p.payload))}`;
    if (!names) return (p: RangePoint) => `${line(p)}\r\n`;
    return (p: RangePoint) => {
      const { device_name, fleet_name } = names(p);
      return `${line(p)},${csvField(device_name)},${csvField(fleet_name)}\r\n`;
    };
  }
  const record = (p: RangePoint) =>
    `{"timestamp_device":"${deviceTime(p.ms, p.us)}","timestamp_in":"${arrival(p.inMs, 0)}","fleet_id":${JSON.stringify(p.fleet_id)},"device_id":${JSON.stringify(p.device_id)},"tag":${JSON.stringify(p.tag)},"payload":${JSON.stringify(p.payload)}`;
  if (!names) return (p: RangePoint) => `${record(p)}}\n`;
  return (p: RangePoint) => {
    const { device_name, fleet_name } = names(p);
    return `${record(p)},"device_name":${JSON.stringify(device_name || null)},"fleet_name":${JSON.stringify(fleet_name || null)}}\n`;
  };
};
