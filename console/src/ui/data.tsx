import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { aggregateChart, everyFor } from '../lib/aggregate';
import type { AggregatePage, ApiClient, TimeseriesRecord } from '../lib/api';
import { extractSeries, formatChartTime, parseTimestamp, seriesLabels, type Series } from '../lib/chart';
import { readDeviceNames } from '../lib/device-names';
import { describeError } from '../lib/errors';
import { exportFileName, recordsToCsv, recordsToJson } from '../lib/export';
import { parseList } from '../lib/json-input';
import type { Pickable } from '../lib/pickers';
import { DEFAULT_RANGE, fromWallInput, RANGES, rangeBounds, REFRESH_CHOICES, toWallInput, zoneName, type RangeKey, type RefreshKey } from '../lib/time';
import type { PageProps } from './page';
import { Chart } from './chart';
import { ExportPanel } from './export-panel';
import { useLive, useThrottled } from './live';
import { Busy, download, ErrorBox, Field, Submit, useAction, VirtualTable, type Column } from './components';
import { EntityPicker, pickedIds, usePickerState, useWorkspaceItems } from './picker';
import { useZone } from './time-zone';

const MAX_SIZE = 175_000;
const ROWS_PER_VIEW = 100;
/** The most often new points read the query again. */
const LIVE_RERUN_MS = 5_000;

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

/** Device ID → name: the names the charts read, and those of the workspace's device list. */
const withListed = (names: ReadonlyMap<string, string>, devices: readonly Pickable[] | undefined) => {
  if (!devices?.length) return names;
  const all = new Map(devices.map((d) => [d.id, d.name]));
  for (const [id, name] of names) all.set(id, name);
  return all;
};

/**
 * Averages over a long range, charted from one aggregation request: the bucket length is chosen
 * from the range (a month in hours), each device a line of its buckets' averages, days and hours
 * those of the browser's time zone.
 */
const AggregatePanel = ({ api, workspaceId, devices: listed }: Pick<PageProps, 'api' | 'workspaceId'> & { devices: readonly Pickable[] | undefined }) => {
  const zone = useZone();
  const [field, setField] = useState('');
  const devices = usePickerState();
  const [tags, setTags] = useState('');
  const [start, setStart] = useState(() => toWallInput(Date.now() - 30 * 24 * 3600_000, zone));
  const [end, setEnd] = useState('');
  const [answer, setAnswer] = useState<{ page: AggregatePage; every: string; tz: string; field: string; tag: string; range: [number, number] } | undefined>(
    undefined,
  );
  const [drawMs, setDrawMs] = useState<number | undefined>(undefined);
  const { busy, error, run } = useAction();
  const chart = useMemo(() => (answer ? aggregateChart(answer.page.buckets, answer.tag, answer.field) : undefined), [answer]);
  const names = useDeviceNames(api, workspaceId, chart?.series);
  const known = useMemo(() => withListed(names.names, listed), [names.names, listed]);
  const labels = useMemo(() => (chart ? seriesLabels(chart.series, known).map((l) => ({ ...l, label: `${l.label} · avg` })) : []), [chart, known]);
  const load = async () => {
    const startMs = fromWallInput(start, zone);
    const endMs = fromWallInput(end, zone);
    const from = startMs === undefined ? undefined : new Date(startMs).toISOString();
    const until = endMs === undefined ? undefined : new Date(endMs).toISOString();
    const deviceList = pickedIds(devices, listed);
    const [first, last] = [startMs ?? 0, endMs ?? Date.now()];
    const every = everyFor(last - first, deviceList.length || 10);
    // days and hours of the console's zone
    const tz = zone;
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
        <EntityPicker
          label="Devices"
          name="aggregate-devices"
          hint="Type part of a name (or an ID); empty: all devices"
          items={listed}
          state={devices}
          multiple
        />
        <Field label="Tags" hint="Empty: all tags">
          <input name="aggregate-tags" value={tags} onInput={(e) => setTags(e.currentTarget.value)} />
        </Field>
        <Field label={`From (${zone}, ${zoneName(Date.now(), zone)})`}>
          <input type="datetime-local" name="aggregate-start" value={start} onInput={(e) => setStart(e.currentTarget.value)} />
        </Field>
        <Field label={`Until (${zone}, excluded)`}>
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
            <Chart data={chart} labels={labels} zone={zone} onDrawn={setDrawMs} testId="aggregate-chart" xRange={answer.range} />
          ) : (
            <p>No numbers in this range.</p>
          )}
        </>
      )}
    </section>
  );
};

/**
 * The time-series explorer: a storage query by devices (picked by name), tags and a time range
 * (relative to now, or absolute in the console's zone), refreshed on request every 30 s or slower;
 * a chart, a raw table, exports of a page or of every point; averages over long ranges. A device's
 * page links here with the device chosen (#/w/<ws>/data/<device>).
 */
export const DataPage = ({ api, workspaceId, deviceId }: PageProps & { deviceId?: string }) => {
  const zone = useZone();
  const items = useWorkspaceItems(api, workspaceId);
  const devices = usePickerState(deviceId ? [deviceId] : []);
  const [tags, setTags] = useState('');
  const [range, setRange] = useState<RangeKey>(DEFAULT_RANGE);
  const [start, setStart] = useState(() => toWallInput(Date.now() - 24 * 3600_000, zone));
  const [end, setEnd] = useState('');
  const [refresh, setRefresh] = useState<RefreshKey>('off');
  const [size, setSize] = useState(1000);
  const [from, setFrom] = useState(0);
  const [sort, setSort] = useState<'timestamp_device' | '-timestamp_device'>('-timestamp_device');
  const [records, setRecords] = useState<TimeseriesRecord[] | undefined>(undefined);
  const [received, setReceived] = useState(0);
  const [drawMs, setDrawMs] = useState<number | undefined>(undefined);
  const { busy, error, run } = useAction();

  /** The storage query of the form as it is now (a relative range ends now). */
  const query = (page: number) => ({
    ...rangeBounds(range, Date.now(), zone, start, end),
    size,
    from: page,
    sort,
    device: pickedIds(devices, items.devices),
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
  /**
   * Runs the query again, on the page shown: the auto-refresh's tick, and and below, what
   * the live layer's new points call.
   */
  const reload = useRef<() => void>(() => undefined);
  reload.current = () => {
    if (!busy && records) void load(from);
  };
  const every = REFRESH_CHOICES.find((c) => c.key === refresh)!.ms;
  useEffect(() => {
    if (!every) return;
    const timer = setInterval(() => reload.current(), every);
    return () => clearInterval(timer);
  }, [every]);

  // New points of the query's devices and tags read the first page again, at most every 5 s, while
  // it reaches to now (no end) and a query has run.
  const rerun = useThrottled(() => void load(0), LIVE_RERUN_MS);
  useLive(workspaceId, 'data', (message) => {
    if (!records || from !== 0 || end || busy) return;
    const wanted = { devices: pickedIds(devices, items.devices), tags: parseList(tags) };
    if (message && wanted.devices.length && !wanted.devices.includes(message.device_id)) return;
    if (message && wanted.tags.length && !message.tags.some((t) => wanted.tags.includes(t))) return;
    rerun();
  });
  const chart = useMemo(() => (records ? extractSeries(records) : undefined), [records]);
  const names = useDeviceNames(api, workspaceId, chart?.series);
  const known = useMemo(() => withListed(names.names, items.devices), [names.names, items.devices]);
  const labels = useMemo(() => (chart ? seriesLabels(chart.series, known) : []), [chart, known]);
  const columns: Column<TimeseriesRecord, RecordColumn>[] = [
    {
      key: 'timestamp_device',
      title: `Device time (${zoneName(Date.now(), zone)})`,
      width: '2fr',
      render: (r) => formatChartTime(parseTimestamp(r.timestamp_device), zone),
    },
    {
      key: 'device_id',
      title: 'Device',
      width: '2fr',
      render: (r) => (
        <span class="clip" title={r.device_id}>
          {known.get(r.device_id) ?? <code>{r.device_id}</code>}
        </span>
      ),
    },
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
        <EntityPicker
          label="Devices"
          name="query-devices"
          hint="Type part of a name (or an ID); empty: all devices"
          items={items.devices}
          state={devices}
          multiple
        />
        <Field label="Tags" hint="Empty: all tags">
          <input name="query-tags" value={tags} onInput={(e) => setTags(e.currentTarget.value)} />
        </Field>
        <Field label="Range">
          <select name="query-range" value={range} onChange={(e) => setRange(e.currentTarget.value as RangeKey)}>
            {RANGES.map((r) => (
              <option value={r.key}>{r.label}</option>
            ))}
          </select>
        </Field>
        {range === 'absolute' && (
          <>
            <Field label={`From (${zone}, ${zoneName(Date.now(), zone)})`}>
              <input type="datetime-local" name="query-start" value={start} onInput={(e) => setStart(e.currentTarget.value)} />
            </Field>
            <Field label={`Until (${zone}, excluded)`}>
              <input type="datetime-local" name="query-end" value={end} onInput={(e) => setEnd(e.currentTarget.value)} />
            </Field>
          </>
        )}
        <Field label="Points per page" hint={`At most ${MAX_SIZE.toLocaleString()}`}>
          <input type="number" name="query-size" min={1} max={MAX_SIZE} required value={size} onInput={(e) => setSize(Number(e.currentTarget.value))} />
        </Field>
        <Field label="Order">
          <select name="query-sort" value={sort} onChange={(e) => setSort(e.currentTarget.value as typeof sort)}>
            <option value="-timestamp_device">newest first</option>
            <option value="timestamp_device">oldest first</option>
          </select>
        </Field>
        <Field label="Auto-refresh" hint="Runs the query again">
          <select name="query-refresh" value={refresh} onChange={(e) => setRefresh(e.currentTarget.value as RefreshKey)}>
            {REFRESH_CHOICES.map((c) => (
              <option value={c.key}>{c.label}</option>
            ))}
          </select>
        </Field>
        <Submit busy={busy}>Run query</Submit>
      </form>
      <ErrorBox error={items.error} />
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
            {chart.series.length ? <Chart data={chart} labels={labels} zone={zone} onDrawn={setDrawMs} /> : <p>No numeric payload fields to draw.</p>}
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
        filters={() => {
          const now = query(from);
          return { start: now.start, end: now.end, device: now.device.length ? now.device : undefined, tag: now.tag.length ? now.tag : undefined };
        }}
      />
      <AggregatePanel api={api} workspaceId={workspaceId} devices={items.devices} />
    </>
  );
};
