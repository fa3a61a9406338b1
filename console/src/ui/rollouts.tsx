import { useEffect, useRef, useState } from 'preact/hooks';
import type { ApiClient, Fleet, Rollout } from '../lib/api';
import { JOB_STATE_MEANINGS, stateLabel } from '../lib/jobs';
import { routeHash } from '../lib/router';
import {
  countsMayMove,
  describeOutcome,
  describeSettings,
  filterCount,
  fromNow,
  progressLabel,
  readRolloutView,
  releaseForecast,
  rolloutActions,
  rolloutProgress,
  rolloutStateLabel,
  rolloutStatuses,
  rolloutTitle,
  ROLLOUT_CONFLICT_HINT,
  STATE_ROLLOUT_MEANINGS,
  type DeviceFilter,
  type RolloutView,
  type ViewWanted,
} from '../lib/rollouts';
import type { PageProps } from './page';
import { Busy, ErrorBox, Field, Name, Pager, useAction, useLoad, usePages, when } from './components';
import { useLive, useThrottled } from './live';

const ROLLOUTS_PAGE = 20;
const DEVICES_PAGE = 50;

/** The fleets a rollout names, by name ("every fleet" when it names none), cut to fit with the whole list on hover. */
const FleetNames = ({ ids, fleets, wide }: { ids: readonly string[]; fleets: readonly Fleet[] | undefined; wide?: boolean }) => (
  <Name text={ids.length ? ids.map((id) => fleets?.find((f) => f.id === id)?.name ?? id).join(', ') : 'every fleet'} wide={wide} />
);

/** Why an aborted rollout aborted, as the API recorded it when its rule fired. */
const AbortReason = ({ reason }: { reason: Rollout['abort_reason'] }) => (
  <div class="card alert" role="note" data-testid="abort-reason">
    <strong>Aborted by its abort rule.</strong>{' '}
    {reason ? (
      <>
        {reason.message} ({when(reason.at)}.) Its queued and pending devices are canceled; those in progress go on.
      </>
    ) : (
      'The counts it fired on were not recorded (it aborted before the API recorded them).'
    )}
  </div>
);

/** A rate-limited rollout's next release and the ETA of its last one (from the API's next release, its queued count and rate). */
const ReleaseFacts = ({ rollout }: { rollout: Rollout }) => {
  if (rollout.status === 'paused' && rollout.counts.queued > 0)
    return (
      <>
        <dt>Next release</dt>
        <dd data-testid="rollout-next-release">none while paused: {rollout.counts.queued} devices wait</dd>
      </>
    );
  const forecast = releaseForecast(rollout);
  if (!forecast) return null;
  return (
    <>
      <dt>Next release</dt>
      <dd data-testid="rollout-next-release">
        {when(forecast.next)} ({fromNow(forecast.next)}): {forecast.nextCount} devices
      </dd>
      <dt>ETA</dt>
      <dd data-testid="rollout-eta">
        every queued device ({rollout.counts.queued}) released by {when(forecast.last)} ({fromNow(forecast.last)}, {forecast.releases}{' '}
        {forecast.releases === 1 ? 'release' : 'releases'}){forecast.endedBy && `; every device ended by ${when(forecast.endedBy)} at the latest (its timeout)`}
      </dd>
    </>
  );
};

/** A rollout's ended devices of its total, a coloured part per ended state. */
const ProgressBar = ({ rollout }: { rollout: Rollout }) => {
  const { ended, total, segments } = rolloutProgress(rollout);
  return (
    <div
      class="rollout-bar"
      role="progressbar"
      aria-valuemin={0}
      aria-valuemax={total}
      aria-valuenow={ended}
      aria-valuetext={progressLabel(rollout)}
      aria-label="Devices ended"
    >
      {segments.map((s) => (
        <span class={`segment ${s.status}`} style={{ width: `${s.percent}%` }} title={`${s.count} ${stateLabel(s.status)}`} />
      ))}
    </div>
  );
};

/** Rollouts: every fleet-wide scheduling of the workspace, newest first, a page at a time. */
export const RolloutsPage = ({ api, workspaceId }: PageProps) => {
  const pages = usePages(workspaceId);
  const rollouts = useLoad(() => api.listRollouts(workspaceId, { limit: ROLLOUTS_PAGE, cursor: pages.cursor }), [workspaceId, pages.cursor]);
  const fleets = useLoad(() => api.listFleets(workspaceId), [workspaceId]);
  return (
    <section aria-labelledby="rollouts-h">
      <h2 id="rollouts-h">Rollouts</h2>
      <p class="hint">
        Every job, FOTA or desired state scheduled on fleets is a rollout: what was scheduled, on which fleets, and where each device stands. Schedule one on
        the <a href={routeHash({ page: 'jobs', workspaceId })}>Jobs and FOTA</a> page.
      </p>
      <ErrorBox error={rollouts.error} />
      {rollouts.loading && <Busy label="Loading rollouts…" />}
      {rollouts.data && !rollouts.data.items.length && pages.first && <p>No rollouts yet.</p>}
      {rollouts.data && rollouts.data.items.length > 0 && (fleets.data || fleets.error) && (
        <table class="list" data-testid="rollouts">
          <thead>
            <tr>
              <th scope="col">Scheduled</th>
              <th scope="col">What</th>
              <th scope="col">Fleets</th>
              <th scope="col">Status</th>
              <th scope="col">Devices ended</th>
            </tr>
          </thead>
          <tbody>
            {rollouts.data.items.map((r) => (
              <tr>
                <td>
                  <a href={routeHash({ page: 'rollout', workspaceId, rolloutId: r.id })}>{when(r.created_at)}</a>
                </td>
                <td>{rolloutTitle(r)}</td>
                <td>
                  <FleetNames ids={r.fleets} fleets={fleets.data} />
                </td>
                <td>{stateLabel(r.status)}</td>
                <td class="progress-cell">
                  <ProgressBar rollout={r} /> {rolloutProgress(r).ended} of {r.total}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <Pager pages={pages} next={rollouts.data?.next} labels={['Newer', 'Older']} onRefresh={rollouts.reload} />
    </section>
  );
};

/**
 * What the rollout page shows, kept coherent: the rollout's counts and the device table are read
 * together by `refresh()` (counts first, then the table those counts call for) and shown together,
 * so the table never trails the counts. At most one refresh is in flight: a new one aborts the one
 * before (its requests are canceled, its answer dropped), so however often it is called the page
 * holds at most one request of its own.
 */
const useRolloutView = (api: ApiClient, workspaceId: string, rolloutId: string) => {
  const [view, setView] = useState<RolloutView | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  // how many refreshes were shown (read, or failed): a refresh superseded by another is not one
  const [refreshes, setRefreshes] = useState(0);
  const wanted = useRef<ViewWanted>({ cursors: [] });
  const inFlight = useRef<AbortController | undefined>(undefined);
  const shown = useRef<RolloutView | undefined>(undefined);

  const refresh = async () => {
    inFlight.current?.abort();
    const controller = new AbortController();
    inFlight.current = controller;
    setBusy(true);
    try {
      const next = await readRolloutView(api, workspaceId, rolloutId, wanted.current, DEVICES_PAGE, controller.signal);
      if (controller.signal.aborted) return;
      // reads are consistent, and a new refresh aborts the last: an older state than shown is not put back
      const before = shown.current;
      if (before && before.rollout.updated_at > next.rollout.updated_at) return;
      wanted.current = { chosen: wanted.current.chosen, filter: next.filter, cursors: next.cursors };
      shown.current = next;
      setView(next);
      setError(undefined);
    } catch (e) {
      if (!controller.signal.aborted) setError(e);
    } finally {
      if (inFlight.current === controller) {
        inFlight.current = undefined;
        setBusy(false);
        if (!controller.signal.aborted) setRefreshes((n) => n + 1);
      }
    }
  };
  /** Stops the refresh in flight (an action is about to change the rollout: its answer would be older). */
  const stop = () => inFlight.current?.abort();
  /** Shows another filter, or another page of the devices: read with the counts, as any refresh. */
  const want = (change: Partial<ViewWanted>) => {
    wanted.current = { ...wanted.current, ...change };
    void refresh();
  };

  useEffect(() => {
    wanted.current = { cursors: [] };
    shown.current = undefined;
    setView(undefined);
    setError(undefined);
    void refresh();
    return () => inFlight.current?.abort();
  }, [workspaceId, rolloutId]);
  return { view, error, busy, refreshes, refresh, stop, want };
};

/** How often the live layer's `rollout` messages read the rollout again at most (a burst of transitions is one read). */
const LIVE_REFRESH_MS = 1_000;

/**
 * When the rollout page refreshes by itself, while its counts may move and the tab is shown: on a
 * live `rollout` message of this rollout (at most every {@link LIVE_REFRESH_MS}), after a reconnection
 * of the live layer, every 30 s while the live connection is down (`useLive`), and at once
 * when the tab is shown again.
 */
const useRefreshTriggers = (workspaceId: string, rolloutId: string, refresh: () => void, live: boolean) => {
  const latest = useRef(refresh);
  latest.current = refresh;
  const shownRefresh = useThrottled(() => {
    if (!document.hidden) latest.current();
  }, LIVE_REFRESH_MS);
  useLive(workspaceId, 'rollout', (message) => {
    if (live && (!message || message.rollout_id === rolloutId)) shownRefresh();
  });
  useEffect(() => {
    if (!live) return;
    const onShown = () => {
      if (!document.hidden) latest.current();
    };
    document.addEventListener('visibilitychange', onShown);
    return () => document.removeEventListener('visibilitychange', onShown);
  }, [live]);
};

/** One rollout: what it schedules, its counts and progress, pause/resume/cancel, and its devices by state. */
export const RolloutPage = ({ api, workspaceId, rolloutId }: PageProps & { rolloutId: string }) => {
  const { view, error, busy, refreshes, refresh, stop, want } = useRolloutView(api, workspaceId, rolloutId);
  const fleets = useLoad(() => api.listFleets(workspaceId), [workspaceId]);
  const change = useAction();
  const live = view !== undefined && countsMayMove(view.rollout);
  useRefreshTriggers(workspaceId, rolloutId, () => void refresh(), live);

  if (!view) return error ? <ErrorBox error={error} /> : <Busy label="Loading the rollout…" />;
  const r = view.rollout;
  const actions = rolloutActions(r.status);
  const act = async (action: 'pause' | 'resume' | 'cancel') => {
    stop();
    // done or refused (a 409: it ended meanwhile), the page then shows it as it is, counts and devices together
    await change.run(() => api.changeRollout(workspaceId, rolloutId, action));
    await refresh();
  };
  return (
    <>
      <p>
        <a href={routeHash({ page: 'rollouts', workspaceId })}>← All rollouts</a>
      </p>
      <h2 class="heading">
        Rollout: <Name text={rolloutTitle(r)} wide /> <code>{r.id}</code>
      </h2>
      {r.status === 'aborted' && <AbortReason reason={r.abort_reason} />}
      <dl class="facts">
        <dt>Status</dt>
        <dd data-testid="rollout-status">{stateLabel(r.status)}</dd>
        <dt>Fleets</dt>
        <dd>
          <FleetNames ids={r.fleets} fleets={fleets.data} wide />
        </dd>
        {r.kind === 'job' && (
          <>
            <dt>Value</dt>
            <dd>
              <code>{JSON.stringify(r.value ?? {})}</code>
            </dd>
          </>
        )}
        {r.kind === 'state' && (
          <>
            <dt>Desired</dt>
            <dd data-testid="rollout-desired">
              <code>{JSON.stringify(r.desired ?? {})}</code>
              <small class="hint"> set on each device as it is released (null removes a key); done once the device reports them</small>
            </dd>
          </>
        )}
        {(r.group_id || r.q) && (
          <>
            <dt>Devices that match</dt>
            <dd data-testid="rollout-target">
              {r.group_id ? (
                <GroupLink api={api} workspaceId={workspaceId} groupId={r.group_id} />
              ) : (
                <a href={routeHash({ page: 'devices', workspaceId, q: r.q ?? '' })}>
                  <code>{r.q}</code>
                </a>
              )}
            </dd>
          </>
        )}
        <dt>Settings</dt>
        <dd data-testid="rollout-settings">
          {r.settings.continuous && (
            <>
              <span class="badge" data-testid="rollout-continuous" title="Devices that match later get it too; it never completes by itself">
                continuous: true
              </span>{' '}
            </>
          )}
          {describeSettings(r.settings).join('; ')}
        </dd>
        <ReleaseFacts rollout={r} />
        <dt>Scheduled</dt>
        <dd>{when(r.created_at)}</dd>
        <dt>Last change</dt>
        <dd>{when(r.updated_at)}</dd>
      </dl>

      {/* busy while a refresh (counts, then devices) is in flight, and how many were shown: the page's own state, which tests wait on */}
      <section aria-labelledby="progress-h" data-testid="rollout-view" aria-busy={busy ? 'true' : 'false'} data-refreshes={refreshes}>
        <h3 id="progress-h">Progress</h3>
        <ProgressBar rollout={r} />
        <p data-testid="rollout-progress">{progressLabel(r)}.</p>
        <dl class="counts" data-testid="rollout-counts">
          {rolloutStatuses(r.kind).map((s) => (
            <div>
              <dt title={(r.kind === 'state' ? STATE_ROLLOUT_MEANINGS[s] : undefined) ?? JOB_STATE_MEANINGS[s]}>{stateLabel(s)}</dt>
              <dd data-count={s}>{r.counts[s]}</dd>
            </div>
          ))}
          <div>
            <dt>total</dt>
            <dd data-count="total">{r.total}</dd>
          </div>
        </dl>
        <p class="hint" data-testid="rollout-live">
          {live ? 'Live: counts and devices follow the rollout while this page is shown.' : 'Final: these counts no longer change.'}{' '}
          <button type="button" onClick={() => void refresh()}>
            Refresh
          </button>
        </p>
        <ErrorBox error={error} />
      </section>

      <div class="toolbar" role="group" aria-label="Rollout actions">
        {actions.pause && (
          <button type="button" disabled={change.busy} onClick={() => act('pause')}>
            Pause
          </button>
        )}
        {actions.resume && (
          <button type="button" disabled={change.busy} onClick={() => act('resume')}>
            Resume
          </button>
        )}
        {actions.cancel && (
          <button
            type="button"
            disabled={change.busy}
            onClick={() => confirm('Cancel this rollout? Its queued and pending devices are canceled; devices already in progress go on.') && act('cancel')}
          >
            Cancel rollout
          </button>
        )}
      </div>
      <ErrorBox error={change.error} hints={{ 409: ROLLOUT_CONFLICT_HINT }} />

      <RolloutDevices workspaceId={workspaceId} view={view} want={want} />
    </>
  );
};

/**
 * A rollout's devices as the last refresh read them with its counts: those that ended badly first
 * (when any did; else every device), or one state, by name, a page at a time.
 */
const RolloutDevices = ({ workspaceId, view, want }: { workspaceId: string; view: RolloutView; want: (change: Partial<ViewWanted>) => void }) => {
  const { rollout, filter, cursors, devices } = view;
  const what = filter === 'bad' ? 'ended badly' : filter === 'all' ? 'yet' : `is ${rolloutStateLabel(rollout.kind, filter)}`;
  return (
    <section aria-labelledby="rollout-devices-h">
      <h3 id="rollout-devices-h">Devices</h3>
      <div class="toolbar">
        <Field label="Show the devices">
          <select name="rollout-device-status" value={filter} onChange={(e) => want({ chosen: e.currentTarget.value as DeviceFilter, cursors: [] })}>
            <option value="bad">that ended badly: failed, timed out, canceled ({filterCount('bad', rollout)})</option>
            {rolloutStatuses(rollout.kind).map((s) => (
              <option value={s}>
                {rolloutStateLabel(rollout.kind, s)} ({rollout.counts[s]})
              </option>
            ))}
            <option value="all">in every state ({rollout.total})</option>
          </select>
        </Field>
      </div>
      {!devices.items.length && <p>No device {what}.</p>}
      {devices.items.length > 0 && (
        <table class="list" data-testid="rollout-devices" data-filter={filter}>
          <thead>
            <tr>
              <th scope="col">Device</th>
              <th scope="col">State</th>
              <th scope="col">Since</th>
              <th scope="col">{rollout.kind === 'job' ? 'Result' : 'Message'}</th>
            </tr>
          </thead>
          <tbody>
            {devices.items.map((d) => (
              <tr data-device={d.device_id}>
                <td>
                  <a href={routeHash({ page: 'device', workspaceId, deviceId: d.device_id })}>
                    <Name text={d.device_name ?? d.device_id} title={d.device_name === undefined ? d.device_id : `${d.device_name} (${d.device_id})`} />
                  </a>
                </td>
                <td>{rolloutStateLabel(rollout.kind, d.status)}</td>
                <td>{when(d.updated_at)}</td>
                <td>{describeOutcome(d)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <div class="toolbar">
        <button type="button" disabled={!cursors.length} onClick={() => want({ filter, cursors: cursors.slice(0, -1) })}>
          Previous devices
        </button>
        <span>Page {cursors.length + 1}</span>
        <button type="button" disabled={!devices.next} onClick={() => devices.next && want({ filter, cursors: [...cursors, devices.next] })}>
          Next devices
        </button>
      </div>
    </section>
  );
};

/** A group by name (its ID until read, or when it no longer exists), linking to its page. */
const GroupLink = ({ api, workspaceId, groupId }: { api: ApiClient; workspaceId: string; groupId: string }) => {
  const group = useLoad(() => api.getGroup(workspaceId, groupId).catch(() => undefined), [workspaceId, groupId]);
  return (
    <a href={routeHash({ page: 'group', workspaceId, groupId })} title={groupId}>
      group {group.data?.name ?? groupId}
    </a>
  );
};
