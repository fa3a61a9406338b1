import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { aggregateChart, everyFor } from '../lib/aggregate';
import type { AggregatePage, ApiClient, TimeseriesRecord } from '../lib/api';
import { extractSeries, seriesLabels, type Series } from '../lib/chart';
import { readDeviceNames } from '../lib/device-names';
import { describeError } from '../lib/errors';
import { exportFileName, recordsToCsv, recordsToJson } from '../lib/export';
import { isoToLocalInput, localInputToIso, parseList } from '../lib/json-input';
import type { PageProps } from './page';
import { Chart } from './chart';
import { ExportPanel } from './export-panel';
import { Busy, download, ErrorBox, Field, Submit, useAction, VirtualTable, type Column } from './components';

const MAX_SIZE = 175_000;
const ROWS_PER_VIEW = 100;

type RecordColumn = 'timestamp_device' | 'device_id' | 'tag' | 'payload';

const NO_NAMES: ReadonlyMap<string, string> = new Map();

/**
 * Names of the charted devices, kept for the workspace while the page is open: a chart with a
 * device not named yet asks for names with one list call (two at most, see {@link readDeviceNames}),
 * never one call per device. Until they come, or if they cannot be read, the chart shows IDs.
 */
const useDeviceNames = (api: ApiClient, workspaceId: string, series: readonly Series[] | undefined) => {
  const [known, setKnown] = useState<{ workspaceId: string; names: ReadonlyMap<string, string> }>({ workspaceId, names: NO_NAMES });
  const [failed, setFailed] = useState<{ workspaceId: string; error: unknown } | undefined>(undefined);
  // the devices asked about, so that a device no list names is not asked about again
  const asked = useRef({ workspaceId, ids: new Set<string>() });
  useEffect(() => {
    if (!series) return;
    if (asked.current.workspaceId !== workspaceId) asked.current = { workspaceId, ids: new Set() };
    const { ids } = asked.current;
    const wanted = new Map<string, string>();
    for (const { deviceId, fleetId } of series) if (!ids.has(deviceId) && !wanted.has(deviceId)) wanted.set(deviceId, fleetId);
    if (!wanted.size) return;
    for (const id of wanted.keys()) ids.add(id);
    setFailed(undefined);
    readDeviceNames((fleets) => api.listDevices(workspaceId, fleets), wanted).then(
      (found) => setKnown((was) => ({ workspaceId, names: new Map([...(was.workspaceId === workspaceId ? was.names : []), ...found]) })),
      (error) => {
        // asked again with the next chart
        for (const id of wanted.keys()) ids.delete(id);
        setFailed({ workspaceId, error });
      },
    );
  }, [api, workspaceId, series]);
  return { names: known.workspaceId === workspaceId ? known.names : NO_NAMES, error: failed?.workspaceId === workspaceId ? failed.error : undefined };
};

/** The browser's time zone (an IANA name), whose days and hours the aggregates follow. */
const localZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

/**
 * Averages over a long range, charted from one aggregation request: the bucket length is chosen
 * from the range (a month in hours), each device a line of its buckets' averages, days and hours
 * those of the browser's time zone.
 */
const AggregatePanel = ({ api, workspaceId }: Pick<PageProps, 'api' | 'workspaceId'>) => {
  const [field, setField] = useState('');
  const [devices, setDevices] = useState('');
  const [tags, setTags] = useState('');
  const [start, setStart] = useState(() => isoToLocalInput(Date.now() - 30 * 24 * 3600_000));
  const [end, setEnd] = useState('');
  const [answer, setAnswer] = useState<{ page: AggregatePage; every: string; tz: string; field: string; tag: string; range: [number, number] } | undefined>(
    undefined,
  );
  const [drawMs, setDrawMs] = useState<number | undefined>(undefined);
  const { busy, error, run } = useAction();
  const chart = useMemo(() => (answer ? aggregateChart(answer.page.buckets, answer.tag, answer.field) : undefined), [answer]);
  const names = useDeviceNames(api, workspaceId, chart?.series);
  const labels = useMemo(() => (chart ? seriesLabels(chart.series, names.names).map((l) => ({ ...l, label: `${l.label} · avg` })) : []), [chart, names.names]);
  const load = async () => {
    const from = localInputToIso(start);
    const until = localInputToIso(end);
    const deviceList = parseList(devices);
    const [first, last] = [Date.parse(from ?? '1970-01-01T00:00:00Z'), Date.parse(until ?? new Date().toISOString())];
    const every = everyFor(last - first, deviceList.length || 10);
    const tz = localZone();
    const page = await run(() =>
      api.aggregateTimeseries(workspaceId, {
        start: from,
        end: until,
        device: deviceList,
        tag: parseList(tags),
        field: field.trim() || undefined,
        every,
        tz,
        fn: 'avg,min,max,count',
        group_by: 'device',
      }),
    );
    if (page) setAnswer({ page, every, tz, field: field.trim() || 'value', tag: parseList(tags).join(',') || 'all tags', range: [first / 1000, last / 1000] });
  };
  return (
    <section aria-labelledby="aggregate-h">
      <form
        class="inline"
        aria-labelledby="aggregate-h"
        onSubmit={(e) => {
          e.preventDefault();
          void load();
        }}
      >
        <h2 id="aggregate-h">Averages over a long range</h2>
        <Field label="Field" hint="A numeric payload field: temp, env.temp; empty: the payload itself">
          <input name="aggregate-field" value={field} onInput={(e) => setField(e.currentTarget.value)} />
        </Field>
        <Field label="Devices" hint="Empty: all devices">
          <input name="aggregate-devices" value={devices} onInput={(e) => setDevices(e.currentTarget.value)} />
        </Field>
        <Field label="Tags" hint="Empty: all tags">
          <input name="aggregate-tags" value={tags} onInput={(e) => setTags(e.currentTarget.value)} />
        </Field>
        <Field label="From (local time)">
          <input type="datetime-local" name="aggregate-start" value={start} onInput={(e) => setStart(e.currentTarget.value)} />
        </Field>
        <Field label="Until (local time, excluded)">
          <input type="datetime-local" name="aggregate-end" value={end} onInput={(e) => setEnd(e.currentTarget.value)} />
        </Field>
        <Submit busy={busy}>Chart averages</Submit>
      </form>
      {busy && <Busy label="Aggregating…" />}
      <ErrorBox error={error} />
      {answer && chart && (
        <>
          <p role="status" data-testid="aggregate-summary">
            {answer.page.buckets.length} buckets of {answer.every} ({answer.tz}) from {answer.page.buckets.reduce((n, b) => n + (b.count ?? 0), 0)} points
            {answer.page.skipped ? `; ${answer.page.skipped} points without a number there` : ''}
            {answer.page.next ? '; more buckets follow: narrow the range' : ''}
            {drawMs !== undefined ? `; drawn in ${Math.round(drawMs)} ms` : ''}.
          </p>
          {names.error !== undefined && <p class="hint">Device names could not be read ({describeError(names.error).title}): the legend shows device IDs.</p>}
          {chart.points ? (
            <Chart data={chart} labels={labels} onDrawn={setDrawMs} testId="aggregate-chart" xRange={answer.range} />
          ) : (
            <p>No numbers in this range.</p>
          )}
        </>
      )}
    </section>
  );
};

/** The time-series explorer: a storage query by devices, tags and time range; a chart, a raw table, exports of a page or of every point; averages over long ranges. */
export const DataPage = ({ api, workspaceId }: PageProps) => {
  const [devices, setDevices] = useState('');
  const [tags, setTags] = useState('');
  const [start, setStart] = useState(() => isoToLocalInput(Date.now() - 24 * 3600_000));
  const [end, setEnd] = useState('');
  const [size, setSize] = useState(1000);
  const [from, setFrom] = useState(0);
  const [sort, setSort] = useState<'timestamp_device' | '-timestamp_device'>('-timestamp_device');
  const [records, setRecords] = useState<TimeseriesRecord[] | undefined>(undefined);
  const [received, setReceived] = useState(0);
  const [drawMs, setDrawMs] = useState<number | undefined>(undefined);
  const { busy, error, run } = useAction();

  const query = (page: number) => ({
    start: localInputToIso(start),
    end: localInputToIso(end),
    size,
    from: page,
    sort,
    device: parseList(devices),
    tag: parseList(tags),
  });
  const load = async (page: number) => {
    setReceived(0);
    setFrom(page);
    const result = await run(() => api.queryTimeseries(workspaceId, query(page), setReceived));
    // where the browser's own work starts, for bench/console.ts (received → chart drawn)
    performance.mark('fleetstream:data-received');
    if (result) setRecords(result);
  };
  const chart = useMemo(() => (records ? extractSeries(records) : undefined), [records]);
  const names = useDeviceNames(api, workspaceId, chart?.series);
  const labels = useMemo(() => (chart ? seriesLabels(chart.series, names.names) : []), [chart, names.names]);
  const columns: Column<TimeseriesRecord, RecordColumn>[] = [
    { key: 'timestamp_device', title: 'Device time', width: '2fr', render: (r) => r.timestamp_device },
    { key: 'device_id', title: 'Device', width: '2fr', render: (r) => <code>{r.device_id}</code> },
    { key: 'tag', title: 'Tag', width: '1fr', render: (r) => r.tag },
    { key: 'payload', title: 'Payload', width: '4fr', render: (r) => <code class="clip">{JSON.stringify(r.payload)}</code> },
  ];
  const q = query(from);

  return (
    <>
      <form
        class="inline"
        aria-labelledby="query-h"
        onSubmit={(e) => {
          e.preventDefault();
          void load(0);
        }}
      >
        <h2 id="query-h">Query data points</h2>
        <Field label="Devices" hint="Device IDs, separated by commas or spaces; empty: all devices">
          <input name="query-devices" value={devices} onInput={(e) => setDevices(e.currentTarget.value)} />
        </Field>
        <Field label="Tags" hint="Empty: all tags">
          <input name="query-tags" value={tags} onInput={(e) => setTags(e.currentTarget.value)} />
        </Field>
        <Field label="From (local time)">
          <input type="datetime-local" name="query-start" value={start} onInput={(e) => setStart(e.currentTarget.value)} />
        </Field>
        <Field label="Until (local time, excluded)">
          <input type="datetime-local" name="query-end" value={end} onInput={(e) => setEnd(e.currentTarget.value)} />
        </Field>
        <Field label="Points per page" hint={`At most ${MAX_SIZE.toLocaleString()}`}>
          <input type="number" name="query-size" min={1} max={MAX_SIZE} required value={size} onInput={(e) => setSize(Number(e.currentTarget.value))} />
        </Field>
        <Field label="Order">
          <select name="query-sort" value={sort} onChange={(e) => setSort(e.currentTarget.value as typeof sort)}>
            <option value="-timestamp_device">newest first</option>
            <option value="timestamp_device">oldest first</option>
          </select>
        </Field>
        <Submit busy={busy}>Run query</Submit>
      </form>
      {busy && <Busy label={`Loading data points… ${(received / 1e6).toFixed(1)} MB received`} />}
      <ErrorBox error={error} />
      {records && chart && (
        <>
          <section aria-labelledby="chart-h">
            <h2 id="chart-h">Chart</h2>
            <p role="status" data-testid="result-summary">
              Page {from + 1}: {records.length} points{records.length === size ? ' (more may follow)' : ''}; {chart.series.length} numeric series
              {chart.dropped ? ` (${chart.dropped} more not drawn: narrow the query)` : ''}
              {drawMs !== undefined ? `; drawn in ${Math.round(drawMs)} ms` : ''}.
            </p>
            {names.error !== undefined && <p class="hint">Device names could not be read ({describeError(names.error).title}): the legend shows device IDs.</p>}
            {chart.series.length ? <Chart data={chart} labels={labels} onDrawn={setDrawMs} /> : <p>No numeric payload fields to draw.</p>}
          </section>
          <section aria-labelledby="raw-h">
            <h2 id="raw-h">Raw data</h2>
            <div class="toolbar">
              <button type="button" disabled={busy || from === 0} onClick={() => load(from - 1)}>
                Previous page
              </button>
              <button type="button" disabled={busy || records.length < size} onClick={() => load(from + 1)}>
                Next page
              </button>
              <button type="button" onClick={() => download(exportFileName(workspaceId, q.start, q.end, 'json'), recordsToJson(records), 'application/json')}>
                Export JSON
              </button>
              <button type="button" onClick={() => download(exportFileName(workspaceId, q.start, q.end, 'csv'), recordsToCsv(records), 'text/csv')}>
                Export CSV
              </button>
            </div>
            <VirtualTable
              label="Data points"
              rows={records}
              columns={columns}
              rowKey={(r) => `${r.timestamp_device}|${r.device_id}|${r.tag}`}
              height={ROWS_PER_VIEW * 4}
            />
          </section>
        </>
      )}
      <ExportPanel
        api={api}
        workspaceId={workspaceId}
        filters={() => ({ start: q.start, end: q.end, device: q.device.length ? q.device : undefined, tag: q.tag.length ? q.tag : undefined })}
      />
      <AggregatePanel api={api} workspaceId={workspaceId} />
    </>
  );
};
