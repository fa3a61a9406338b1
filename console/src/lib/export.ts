import type { TimeseriesRecord } from './api';

/** The columns of a CSV export, in order; the payload is one JSON cell. */
export const CSV_COLUMNS = ['timestamp_device', 'timestamp_in', 'fleet_id', 'device_id', 'tag', 'payload'] as const;

/** Quotes a CSV cell when it must be (RFC 4180): a comma, a quote, a line break, or edge spaces. */
export const csvCell = (value: string): string => (/[",\r\n]|^\s|\s$/.test(value) ? `"${value.replace(/"/g, '""')}"` : value);

/**
 * Guards a cell a spreadsheet would run as a formula (`=`, `+`, `-`, `@`, tab, CR at the start:
 * CSV injection) with a leading apostrophe; numbers such as `-3.5` stay as they are.
 */
export const defuseFormula = (value: string): string => (/^[=+\-@\t\r]/.test(value) && !/^[-+]?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(value) ? `'${value}` : value);

/** Records as CSV (header line, CRLF line ends as RFC 4180 says), the payload as compact JSON. */
export const recordsToCsv = (records: readonly TimeseriesRecord[]): string => {
  const lines = [CSV_COLUMNS.join(',')];
  for (const record of records) {
    lines.push(
      CSV_COLUMNS.map((column) => {
        const raw = record[column];
        const text = column === 'payload' ? JSON.stringify(raw ?? null) : String(raw ?? '');
        return csvCell(defuseFormula(text));
      }).join(','),
    );
  }
  return `${lines.join('\r\n')}\r\n`;
};

/** Records as the storage query answers them (`{"result": […]}`), so an export reads like the API. */
export const recordsToJson = (records: readonly TimeseriesRecord[]): string => JSON.stringify({ result: records }, null, 2);

/** A file name for an export: workspace, range and kind, with no characters a file system refuses. */
export const exportFileName = (workspaceId: string, start: string | undefined, end: string | undefined, kind: 'csv' | 'json') =>
  `${[workspaceId, start, end]
    .filter(Boolean)
    .join('_')
    .replace(/[^A-Za-z0-9_.-]+/g, '-')}.${kind}`;
