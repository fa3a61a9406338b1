import { useEffect, useRef, useState } from 'preact/hooks';
import type { ApiClient, DataExport, ExportFilters } from '../lib/api';
import { Busy, ErrorBox, useAction, when } from './components';
import { FALLBACK_REFRESH_MS, useLive, useLiveState, useThrottled } from './live';

/** How often the live layer's `export` messages read the running export again at most (a part's message, or its end). */
const LIVE_REFRESH_MS = 1_000;

const megabytes = (bytes: number) => `${(bytes / 1e6).toFixed(bytes < 1e6 ? 3 : 1)} MB`;

/**
 * The Export button of the Data page: every point the query's filters select (not one page), as
 * a file made in the background. It shows the points written so far while the export runs, then
 * the file's download link (a presigned URL, valid an hour), or why it failed. A running export is
 * read again on the live layer's `export` messages of it (at most every {@link LIVE_REFRESH_MS}),
 * once the live connection is up (a message sent before may have been missed), after a
 * reconnection, and every 30 s while the connection is down: never polled faster.
 */
export const ExportPanel = ({ api, workspaceId, filters }: { api: ApiClient; workspaceId: string; filters: () => ExportFilters }) => {
  const [format, setFormat] = useState<DataExport['format']>('csv');
  const [names, setNames] = useState(false);
  const [current, setCurrent] = useState<DataExport | undefined>(undefined);
  const { busy, error, run } = useAction();
  const running = current?.status === 'running';

  const shown = useRef(current);
  shown.current = current;
  const [failedReads, setFailedReads] = useState(0);
  // A late answer about another (an earlier) export is dropped; a failed read keeps what is shown
  // and is tried again in 30 s (its end's message may have been the one it answered).
  const reload = useThrottled(() => {
    const exporting = shown.current;
    if (exporting?.status !== 'running') return;
    api.getExport(workspaceId, exporting.id).then(
      (read) => setCurrent((now) => (now?.id === read.id ? read : now)),
      () => setFailedReads((n) => n + 1),
    );
  }, LIVE_REFRESH_MS);
  useEffect(() => {
    if (!failedReads) return;
    const timer = setTimeout(reload, FALLBACK_REFRESH_MS);
    return () => clearTimeout(timer);
  }, [failedReads]);
  useLive(workspaceId, 'export', (message) => {
    if (!message || message.export_id === shown.current?.id) reload();
  });
  const connected = useLiveState() === 'live';
  useEffect(() => {
    if (running && connected) reload();
  }, [running, connected]);

  const start = async () => {
    const started = await run(() => api.createExport(workspaceId, format, filters(), { names }));
    if (started) setCurrent(started);
  };
  return (
    <section aria-labelledby="export-h">
      <h2 id="export-h">Export to a file</h2>
      <p class="hint">Every point the query above selects, however many (not only this page), in a file to download.</p>
      <div class="toolbar">
        <select name="export-format" aria-label="Export format" value={format} onChange={(e) => setFormat(e.currentTarget.value as DataExport['format'])}>
          <option value="csv">CSV</option>
          <option value="ndjson">NDJSON (one JSON record a line)</option>
        </select>
        <label>
          <input type="checkbox" name="export-names" checked={names} onChange={(e) => setNames(e.currentTarget.checked)} /> Add device and fleet names
        </label>
        <button type="button" disabled={busy || running} onClick={() => void start()}>
          Export
        </button>
      </div>
      <ErrorBox error={error} />
      {running && <Busy label={`Exporting… ${current.rows.toLocaleString()} points written so far`} />}
      {current?.status === 'ready' && (
        <p role="status" data-testid="export-status">
          Ready: {current.rows.toLocaleString()} points, {megabytes(current.bytes)}.{' '}
          <a href={current.url!} download data-testid="export-link">
            Download {current.id}.{current.format}
          </a>{' '}
          (the link works until {when(current.url_expires_at)}; the file is deleted {when(current.expires_at)}).
        </p>
      )}
      {current?.status === 'failed' && (
        <div class="error" role="alert" data-testid="export-status">
          <strong>The export failed.</strong> {current.error?.message}
        </div>
      )}
    </section>
  );
};
