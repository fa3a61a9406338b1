import type { ExportFormat } from '../../schemas/export';
import { formatTime } from '../../shared/timestamps';
import type { RangePoint } from '../../stores/timeseries';

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

/** What a file starts with: the CSV header line (records end in CRLF, as RFC 4180 has them); nothing for NDJSON. */
export const exportHeader = (format: ExportFormat) => (format === 'csv' ? `${CSV_COLUMNS.join(',')}\r\n` : '');

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
 * fields in the query's order, and a line feed.
 */
export const lineFormatter = (format: ExportFormat) => {
  const deviceTime = lastTime();
  const arrival = lastTime();
  if (format === 'csv') {
    return (p: RangePoint) =>
      `${csvField(p.device_id)},${csvField(p.fleet_id)},${csvField(p.tag)},${deviceTime(p.ms, p.us)},${arrival(p.inMs, 0)},${csvField(JSON.stringify(p.payload))}\r\n`;
  }
  return (p: RangePoint) =>
    `{"timestamp_device":"${deviceTime(p.ms, p.us)}","timestamp_in":"${arrival(p.inMs, 0)}","fleet_id":${JSON.stringify(p.fleet_id)},"device_id":${JSON.stringify(p.device_id)},"tag":${JSON.stringify(p.tag)},"payload":${JSON.stringify(p.payload)}}\n`;
};
