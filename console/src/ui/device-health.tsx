import { useEffect, useState } from 'preact/hooks';
import type { ApiClient, Device, DeviceEvent } from '../lib/api';
import { describeEvent, sparklinePoints, tagHealth } from '../lib/health';
import { routeHash } from '../lib/router';
import { Busy, ErrorBox, useAction, useLoad, when } from './components';
import { useLive, useThrottled } from './live';

/** How often the live layer's messages of the device read its health again at most. */
const LIVE_REFRESH_MS = 4_000;
/** The newest points read for the latest values and sparklines: one storage query, this many points of the last 7 days. */
export const HEALTH_POINTS = 500;
const HEALTH_DAYS = 7;
const EVENTS_PAGE = 25;

/** The window event `reloadDeviceHealth()` sends: the device page's parts that follow the device listen to it. */
export const STALE_EVENT = 'fleetstream:device-health-stale';

/** Tells an open device page to read its health again now (the live layer calls it on new data or a connection change). */
export const reloadDeviceHealth = () => dispatchEvent(new Event(STALE_EVENT));

const SPARK_W = 120;
const SPARK_H = 24;

/** A tiny inline chart of a tag's recent values (no library: one SVG polyline). */
const Sparkline = ({ values, label }: { values: number[]; label: string }) =>
  values.length > 1 ? (
    <svg class="sparkline" width={SPARK_W} height={SPARK_H} viewBox={`-1 -1 ${SPARK_W + 2} ${SPARK_H + 2}`} role="img" aria-label={label}>
      <polyline fill="none" stroke="currentColor" stroke-width="1.5" points={sparklinePoints(values, SPARK_W, SPARK_H)} />
    </svg>
  ) : null;

const shortJson = (v: unknown) => {
  const text = JSON.stringify(v);
  return text.length > 80 ? `${text.slice(0, 79)}…` : text;
};

/** A device's health: last data, firmware, the latest value of each tag with a sparkline, its event timeline, its data one click away. */
export const DeviceHealth = ({ api, workspaceId, device, reloadDevice }: { api: ApiClient; workspaceId: string; device: Device; reloadDevice: () => void }) => {
  const points = useLoad(
    () =>
      api.queryTimeseries(workspaceId, {
        device: [device.id],
        sort: '-timestamp_device',
        size: HEALTH_POINTS,
        start: new Date(Date.now() - HEALTH_DAYS * 86_400_000).toISOString(),
      }),
    [workspaceId, device.id],
  );
  const events = useLoad(() => api.listDeviceEvents(workspaceId, device.id, { limit: EVENTS_PAGE }), [workspaceId, device.id]);
  const [older, setOlder] = useState<{ events: DeviceEvent[]; next: string | null } | undefined>(undefined);
  const more = useAction();
  const reload = () => {
    points.reload();
    events.reload();
    reloadDevice();
  };
  // Read again on the live layer's new data or connection change of this device (at most every
  // 4 s), every 30 s while the live connection is down, and when reloadDeviceHealth() says so.
  const soon = useThrottled(reload, LIVE_REFRESH_MS);
  const ofThisDevice = (message: { device_id: string } | undefined) => {
    if (!message || message.device_id === device.id) soon();
  };
  useLive(workspaceId, 'data', ofThisDevice);
  useLive(workspaceId, 'connection', ofThisDevice);
  useEffect(() => {
    const now = () => reload();
    addEventListener(STALE_EVENT, now);
    return () => removeEventListener(STALE_EVENT, now);
  }, [workspaceId, device.id]);
  useEffect(() => setOlder(undefined), [workspaceId, device.id]);

  const tags = points.data ? tagHealth(points.data) : undefined;
  const timeline = [...(events.data?.events ?? []), ...(older?.events ?? [])];
  const next = older ? older.next : (events.data?.next ?? null);
  return (
    <section aria-labelledby="health-h">
      <h3 id="health-h">Health</h3>
      <dl class="facts">
        <dt>Last data</dt>
        <dd data-testid="last-seen">{when(device.last_seen_at)}</dd>
        <dt>Firmware</dt>
        <dd data-testid="firmware">{device.firmware_version ?? 'unknown'}</dd>
      </dl>
      <p>
        <a href={routeHash({ page: 'data', workspaceId, deviceId: device.id })}>See this device’s data</a>
      </p>

      <h4>Latest values</h4>
      <ErrorBox error={points.error} />
      {!tags && !points.error && <Busy label="Reading the latest values…" />}
      {tags && !tags.length && <p>No data points in the last {HEALTH_DAYS} days.</p>}
      {tags && tags.length > 0 && (
        <table class="list" data-testid="latest-values">
          <thead>
            <tr>
              <th scope="col">Tag</th>
              <th scope="col">Latest</th>
              <th scope="col">At</th>
              <th scope="col">Recent</th>
            </tr>
          </thead>
          <tbody>
            {tags.map((t) => (
              <tr data-tag={t.tag}>
                <td>{t.tag}</td>
                <td>
                  <code class="clip">{shortJson(t.latest.payload)}</code>
                </td>
                <td>{when(t.latest.timestamp_device)}</td>
                <td>
                  <Sparkline values={t.values} label={`${t.tag} ${t.field ?? ''}: last ${t.values.length} values`} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}

      <h4>Events</h4>
      <ErrorBox error={events.error ?? more.error} />
      {!events.data && !events.error && <Busy label="Reading the device’s events…" />}
      {events.data && !timeline.length && <p>No events in the last 30 days.</p>}
      {timeline.length > 0 && (
        <ol class="timeline" data-testid="timeline">
          {timeline.map((e) => (
            <li data-type={e.type}>
              <time dateTime={e.ts}>{when(e.ts)}</time> {describeEvent(e)}
            </li>
          ))}
        </ol>
      )}
      {next && (
        <button
          type="button"
          disabled={more.busy}
          onClick={async () => {
            const page = await more.run(() => api.listDeviceEvents(workspaceId, device.id, { limit: EVENTS_PAGE, before: next }));
            if (page) setOlder((was) => ({ events: [...(was?.events ?? []), ...page.events], next: page.next }));
          }}
        >
          Older events
        </button>
      )}
    </section>
  );
};
