import { useEffect, useRef, useState } from 'preact/hooks';
import { JOB_STATUSES, type ApiClient, type Fleet, type Rollout } from '../lib/api';
import { JOB_STATE_MEANINGS, stateLabel } from '../lib/jobs';
import { routeHash } from '../lib/router';
import {
  countsKey,
  countsMayMove,
  defaultDeviceFilter,
  describeOutcome,
  describeSettings,
  filterCount,
  filterStates,
  fromNow,
  listLags,
  progressLabel,
  releaseForecast,
  rolloutActions,
  rolloutProgress,
  rolloutTitle,
  ROLLOUT_CONFLICT_HINT,
  ROLLOUT_POLL_MS,
  type DeviceFilter,
} from '../lib/rollouts';
import type { PageProps } from './page';
import { Busy, ErrorBox, Field, Name, Pager, useAction, useLoad, usePages, when } from './components';

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
        Every job or FOTA scheduled on fleets is a rollout: what was scheduled, on which fleets, and where each device stands. Schedule one on the{' '}
        <a href={routeHash({ page: 'jobs', workspaceId })}>Jobs and FOTA</a> page.
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
 * Reads the rollout again every {@link ROLLOUT_POLL_MS} while its counts may move and the page is
 * shown (not while the browser tab is hidden); stops once they have settled, or when the page is left.
 */
const useLiveRollout = (api: ApiClient, workspaceId: string, rolloutId: string) => {
  const rollout = useLoad(() => api.getRollout(workspaceId, rolloutId), [workspaceId, rolloutId]);
  const [pollError, setPollError] = useState<unknown>(undefined);
  const [polls, setPolls] = useState(0);
  const current = rollout.data;
  const live = current !== undefined && countsMayMove(current);
  useEffect(() => {
    if (!live) return;
    let left = false;
    const timer = setTimeout(async () => {
      if (!document.hidden) {
        try {
          const next = await api.getRollout(workspaceId, rolloutId);
          if (left) return;
          // a read that left before a pause's answer came back must not put the older state back
          rollout.setData((shown) => (shown && shown.updated_at > next.updated_at ? shown : next));
          setPollError(undefined);
        } catch (error) {
          if (left) return;
          setPollError(error);
        }
      }
      setPolls((n) => n + 1);
    }, ROLLOUT_POLL_MS);
    return () => {
      left = true;
      clearTimeout(timer);
    };
  }, [live, polls, workspaceId, rolloutId]);
  return { ...rollout, live, pollError };
};

/** One rollout: what it schedules, its live counts and progress, pause/resume/cancel, and its devices by state. */
export const RolloutPage = ({ api, workspaceId, rolloutId }: PageProps & { rolloutId: string }) => {
  const rollout = useLiveRollout(api, workspaceId, rolloutId);
  const fleets = useLoad(() => api.listFleets(workspaceId), [workspaceId]);
  const change = useAction();

  if (rollout.error) return <ErrorBox error={rollout.error} />;
  if (!rollout.data) return <Busy label="Loading the rollout…" />;
  const r = rollout.data;
  const actions = rolloutActions(r.status);
  const act = async (action: 'pause' | 'resume' | 'cancel') => {
    const changed = await change.run(() => api.changeRollout(workspaceId, rolloutId, action));
    if (changed) rollout.setData(changed);
    // a 409: it ended meanwhile; show it as it is
    else rollout.reload();
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
        <dt>Settings</dt>
        <dd data-testid="rollout-settings">{describeSettings(r.settings).join('; ')}</dd>
        <ReleaseFacts rollout={r} />
        <dt>Scheduled</dt>
        <dd>{when(r.created_at)}</dd>
        <dt>Last change</dt>
        <dd>{when(r.updated_at)}</dd>
      </dl>

      <section aria-labelledby="progress-h">
        <h3 id="progress-h">Progress</h3>
        <ProgressBar rollout={r} />
        <p data-testid="rollout-progress">{progressLabel(r)}.</p>
        <dl class="counts" data-testid="rollout-counts">
          {JOB_STATUSES.map((s) => (
            <div>
              <dt title={JOB_STATE_MEANINGS[s]}>{stateLabel(s)}</dt>
              <dd data-count={s}>{r.counts[s]}</dd>
            </div>
          ))}
          <div>
            <dt>total</dt>
            <dd data-count="total">{r.total}</dd>
          </div>
        </dl>
        <p class="hint" data-testid="rollout-live">
          {rollout.live ? `Live: read again every ${ROLLOUT_POLL_MS / 1000} s while this page is open.` : 'Final: these counts no longer change.'}
        </p>
        <ErrorBox error={rollout.pollError} />
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

      <RolloutDevices api={api} workspaceId={workspaceId} rollout={r} />
    </>
  );
};

/** Runs `effect` when `value` changes after the first render (not on mount). */
const useOnChange = (value: unknown, effect: () => void) => {
  const seen = useRef(value);
  useEffect(() => {
    if (Object.is(seen.current, value)) return;
    seen.current = value;
    effect();
  }, [value]);
};

// How many times in a row the device list is read again while it shows less than the counts say.
const LAG_READS = 30;

/**
 * A rollout's devices, those that ended badly first (when any did; else every device), or one
 * state, by name, a page at a time. Its first page is read again whenever a count changes (kept on
 * screen meanwhile), and again while it shows less than the counts say (its index may lag them).
 */
const RolloutDevices = ({ api, workspaceId, rollout }: { api: ApiClient; workspaceId: string; rollout: Rollout }) => {
  const [chosen, setChosen] = useState<DeviceFilter | undefined>(undefined);
  const filter = chosen ?? defaultDeviceFilter(rollout.counts);
  const pages = usePages(`${rollout.id}/${filter}`);
  const devices = useLoad(
    () => api.listRolloutDevices(workspaceId, rollout.id, { status: filterStates(filter), limit: DEVICES_PAGE, cursor: pages.cursor }),
    [workspaceId, rollout.id, filter, pages.cursor],
  );
  const counts = countsKey(rollout.counts);
  const [lagReads, setLagReads] = useState(0);
  useOnChange(counts, () => {
    setLagReads(0);
    if (pages.first) devices.reload();
  });
  const lagging =
    pages.first && devices.data !== undefined && !devices.loading && lagReads < LAG_READS && listLags(devices.data.items, filter, rollout, DEVICES_PAGE);
  useEffect(() => {
    if (!lagging) return;
    let timer: ReturnType<typeof setTimeout>;
    // nothing is read while the tab is hidden: it waits for the tab to show again
    const later = () => {
      timer = setTimeout(() => {
        if (document.hidden) return later();
        setLagReads((n) => n + 1);
        devices.reload();
      }, ROLLOUT_POLL_MS);
    };
    later();
    return () => clearTimeout(timer);
  }, [lagging, devices.data]);
  const what = filter === 'bad' ? 'ended badly' : filter === 'all' ? 'yet' : `is ${stateLabel(filter)}`;
  return (
    <section aria-labelledby="rollout-devices-h">
      <h3 id="rollout-devices-h">Devices</h3>
      <div class="toolbar">
        <Field label="Show the devices">
          <select name="rollout-device-status" value={filter} onChange={(e) => setChosen(e.currentTarget.value as DeviceFilter)}>
            <option value="bad">that ended badly: failed, timed out, canceled ({filterCount('bad', rollout)})</option>
            {JOB_STATUSES.map((s) => (
              <option value={s}>
                {stateLabel(s)} ({rollout.counts[s]})
              </option>
            ))}
            <option value="all">in every state ({rollout.total})</option>
          </select>
        </Field>
      </div>
      <ErrorBox error={devices.error} />
      {devices.data && !devices.data.items.length && <p>No device {what}.</p>}
      {devices.data && devices.data.items.length > 0 && (
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
            {devices.data.items.map((d) => (
              <tr data-device={d.device_id}>
                <td>
                  <a href={routeHash({ page: 'device', workspaceId, deviceId: d.device_id })}>
                    <Name text={d.device_name ?? d.device_id} title={d.device_name === undefined ? d.device_id : `${d.device_name} (${d.device_id})`} />
                  </a>
                </td>
                <td>{stateLabel(d.status)}</td>
                <td>{when(d.updated_at)}</td>
                <td>{describeOutcome(d)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <Pager pages={pages} next={devices.data?.next} labels={['Previous devices', 'Next devices']} />
    </section>
  );
};
