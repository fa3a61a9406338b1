import { useEffect, useState } from 'preact/hooks';
import type { Overview, OverviewCounts } from '../lib/api';
import { SEVERITIES } from '../lib/alarms';
import { progressLabel, rolloutTitle } from '../lib/rollouts';
import { routeHash } from '../lib/router';
import type { PageProps } from './page';
import { Busy, ErrorBox, useLoad, when } from './components';
import { useLive, useThrottled } from './live';

/** How often new data points read the overview again at most (each read is a pass over the workspace's devices). */
export const OVERVIEW_REFRESH_MS = 30_000;

/** How often connections, rollout counts and webhook statuses read the overview again at most. */
const LIVE_REFRESH_MS = 4_000;

const STALE_EVENT = 'fleetstream:overview-stale';

/**
 * Tells an open Overview page to read itself again now (the live layer calls it on a pushed
 * change: a connection, data, a rollout's counts, a webhook's status).
 */
export const reloadOverview = () => dispatchEvent(new Event(STALE_EVENT));

/** The silence thresholds offered, in seconds (the API's default is 15 minutes). */
const SILENCES: ReadonlyArray<[number, string]> = [
  [300, '5 minutes'],
  [900, '15 minutes'],
  [3600, '1 hour'],
  [86_400, '24 hours'],
];

const firmwareText = (firmware: OverviewCounts['firmware']) => firmware.map((f) => `${f.version} × ${f.devices}`).join(', ') || '—';

/** The workspace at a glance: the console's home. */
export const OverviewPage = ({ api, workspaceId }: PageProps) => {
  const [silentAfter, setSilentAfter] = useState(900);
  const overview = useLoad(() => api.getOverview(workspaceId, silentAfter), [workspaceId, silentAfter]);
  // Read again on the live layer's changes: a connection, a rollout's counts or a webhook's status
  // at most every 4 s, new data (which only moves "silent" and "never sent data") at most every 30 s;
  // every 30 s while the live connection is down; and when reloadOverview() says so.
  const soon = useThrottled(overview.reload, LIVE_REFRESH_MS);
  const later = useThrottled(overview.reload, OVERVIEW_REFRESH_MS);
  useLive(workspaceId, 'connection', soon);
  useLive(workspaceId, 'rollout', soon);
  useLive(workspaceId, 'webhook', soon);
  useLive(workspaceId, 'alarm', soon);
  useLive(workspaceId, 'data', later);
  useEffect(() => {
    addEventListener(STALE_EVENT, overview.reload);
    return () => removeEventListener(STALE_EVENT, overview.reload);
  }, [workspaceId, silentAfter]);

  return (
    <>
      <h2>Overview</h2>
      <label>
        Silent after{' '}
        <select name="silent-after" value={silentAfter} onChange={(e) => setSilentAfter(Number(e.currentTarget.value))}>
          {SILENCES.map(([seconds, label]) => (
            <option value={seconds}>{label}</option>
          ))}
        </select>{' '}
        without data
      </label>
      <ErrorBox error={overview.error} />
      {!overview.data && !overview.error && <Busy label="Counting the workspace’s devices…" />}
      {overview.data && <OverviewBody overview={overview.data} workspaceId={workspaceId} />}
    </>
  );
};

const OverviewBody = ({ overview: o, workspaceId }: { overview: Overview; workspaceId: string }) => (
  <>
    <dl class="facts" data-testid="overview-totals">
      <dt>Devices</dt>
      <dd data-count="devices">{o.totals.devices}</dd>
      <dt>Online</dt>
      <dd data-count="online">{o.totals.online}</dd>
      <dt>Offline</dt>
      <dd data-count="offline">{o.totals.offline}</dd>
      <dt>Silent</dt>
      <dd data-count="silent">{o.totals.silent}</dd>
      <dt>Never sent data</dt>
      <dd data-count="never_seen">{o.totals.never_seen}</dd>
    </dl>
    <p class="hint">Counted {when(o.at)}; counted again as devices connect, rollouts move, webhooks fail and alarms open or close.</p>

    {o.open_alarms && (
      <section aria-labelledby="ov-alarms-h">
        <h3 id="ov-alarms-h">Open alarms</h3>
        <dl class="facts" data-testid="overview-alarms">
          <dt>All</dt>
          <dd data-alarms="total">{o.open_alarms.total}</dd>
          {SEVERITIES.map((s) => (
            <>
              <dt>{s}</dt>
              <dd data-alarms={s}>{o.open_alarms![s]}</dd>
            </>
          ))}
        </dl>
        <p>
          Alarms open or acknowledged, not yet closed. <a href={routeHash({ page: 'alarms', workspaceId })}>Alarms</a>
        </p>
      </section>
    )}

    <section aria-labelledby="ov-fleets-h">
      <h3 id="ov-fleets-h">Fleets</h3>
      <table class="list" data-testid="overview-fleets">
        <thead>
          <tr>
            <th scope="col">Fleet</th>
            <th scope="col">Devices</th>
            <th scope="col">Online</th>
            <th scope="col">Offline</th>
            <th scope="col">Silent</th>
            <th scope="col">Firmware</th>
          </tr>
        </thead>
        <tbody>
          {o.fleets.map((f) => (
            <tr data-fleet={f.fleet_id}>
              <td>
                <a href={routeHash({ page: 'devices', workspaceId })} title={f.fleet_name}>
                  {f.fleet_name || f.fleet_id}
                </a>
              </td>
              <td>{f.devices}</td>
              <td>{f.online}</td>
              <td>{f.offline}</td>
              <td>{f.silent}</td>
              <td>{firmwareText(f.firmware)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>

    <section aria-labelledby="ov-fw-h">
      <h3 id="ov-fw-h">Firmware versions</h3>
      <table class="list" data-testid="overview-firmware">
        <thead>
          <tr>
            <th scope="col">Version</th>
            <th scope="col">Devices</th>
          </tr>
        </thead>
        <tbody>
          {o.totals.firmware.map((f) => (
            <tr data-version={f.version}>
              <td>{f.version}</td>
              <td>{f.devices}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p>
        <a href={routeHash({ page: 'firmware', workspaceId })}>Firmware</a> · <a href={routeHash({ page: 'jobs', workspaceId })}>Schedule a FOTA</a>
      </p>
    </section>

    <section aria-labelledby="ov-rollouts-h">
      <h3 id="ov-rollouts-h">Rollouts in progress</h3>
      {o.rollouts.length ? (
        <ul data-testid="overview-rollouts">
          {o.rollouts.map((r) => (
            <li>
              <a href={routeHash({ page: 'rollout', workspaceId, rolloutId: r.id })}>{rolloutTitle(r)}</a> — {r.status.replace('_', ' ')}, {progressLabel(r)}
            </li>
          ))}
        </ul>
      ) : (
        <p>
          None. <a href={routeHash({ page: 'rollouts', workspaceId })}>All rollouts</a>
        </p>
      )}
    </section>

    <section aria-labelledby="ov-state-h">
      <h3 id="ov-state-h">Desired state not yet applied</h3>
      {o.non_compliant.devices ? (
        <>
          <p data-testid="overview-non-compliant">
            {o.non_compliant.devices} {o.non_compliant.devices === 1 ? 'device has' : 'devices have'} not reported{' '}
            {o.non_compliant.keys.length === 1 ? 'a desired key' : 'desired keys'} yet:
          </p>
          <ul>
            {o.non_compliant.keys.map((k) => (
              <li data-key={k.key}>
                <code>{k.key}</code> on {k.devices} {k.devices === 1 ? 'device' : 'devices'}
              </li>
            ))}
          </ul>
        </>
      ) : (
        <p>None: every device reports its desired state.</p>
      )}
      <p>
        <a href={routeHash({ page: 'rollouts', workspaceId })}>State rollouts</a> list the devices of each change that have not applied it.
      </p>
    </section>

    <section aria-labelledby="ov-hooks-h">
      <h3 id="ov-hooks-h">Failing webhooks</h3>
      {o.webhooks.length ? (
        <table class="list" data-testid="overview-webhooks">
          <thead>
            <tr>
              <th scope="col">Webhook</th>
              <th scope="col">Failures in a row</th>
              <th scope="col">Last error</th>
              <th scope="col">Last success</th>
            </tr>
          </thead>
          <tbody>
            {o.webhooks.map((w) => (
              <tr>
                <td>
                  <a href={routeHash({ page: 'integrations', workspaceId })}>{w.name}</a>
                  {w.enabled ? '' : ' (disabled)'}
                </td>
                <td>{w.consecutive_failures}</td>
                <td>
                  {w.last_error ?? '—'} {w.last_error_at ? `(${when(w.last_error_at)})` : ''}
                </td>
                <td>{when(w.last_delivery_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p>
          None: every webhook’s last delivery succeeded. <a href={routeHash({ page: 'integrations', workspaceId })}>Integrations</a>
        </p>
      )}
    </section>
  </>
);
