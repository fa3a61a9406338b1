import { useEffect, useState } from 'preact/hooks';
import { JOB_STATUSES, type ApiClient, type Fleet, type JobStatus, type Rollout } from '../lib/api';
import { JOB_STATE_MEANINGS, stateLabel } from '../lib/jobs';
import { routeHash } from '../lib/router';
import {
  countsMayMove,
  describeOutcome,
  describeSettings,
  progressLabel,
  rolloutActions,
  rolloutProgress,
  rolloutTitle,
  ROLLOUT_CONFLICT_HINT,
  ROLLOUT_POLL_MS,
} from '../lib/rollouts';
import type { PageProps } from './page';
import { Busy, ErrorBox, Field, Pager, useAction, useLoad, usePages, when } from './components';

const ROLLOUTS_PAGE = 20;
const DEVICES_PAGE = 50;

/** The fleets a rollout names, by name ("every fleet" when it names none). */
const fleetNames = (ids: readonly string[], fleets: readonly Fleet[] | undefined) =>
  ids.length ? ids.map((id) => fleets?.find((f) => f.id === id)?.name ?? id).join(', ') : 'every fleet';

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
      {rollouts.data && rollouts.data.items.length > 0 && (
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
                <td>{fleetNames(r.fleets, fleets.data)}</td>
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
      <h2>
        Rollout: {rolloutTitle(r)} <code>{r.id}</code>
      </h2>
      <dl class="facts">
        <dt>Status</dt>
        <dd data-testid="rollout-status">{stateLabel(r.status)}</dd>
        <dt>Fleets</dt>
        <dd>{fleetNames(r.fleets, fleets.data)}</dd>
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

/** A rollout's devices in one state (the failed ones first), a page at a time, read again as that state's count moves. */
const RolloutDevices = ({ api, workspaceId, rollout }: { api: ApiClient; workspaceId: string; rollout: Rollout }) => {
  const [status, setStatus] = useState<JobStatus | ''>('failed');
  const pages = usePages(`${rollout.id}/${status}`);
  const count = status ? rollout.counts[status] : rollout.total;
  // The first page follows the count; the list is read from an index that may lag it a moment.
  const devices = useLoad(
    () => api.listRolloutDevices(workspaceId, rollout.id, { status: status || undefined, limit: DEVICES_PAGE, cursor: pages.cursor }),
    [workspaceId, rollout.id, status, pages.cursor, pages.first ? count : -1],
  );
  const shown = devices.data?.items.length;
  const behind = pages.first && shown !== undefined && !devices.loading && shown < Math.min(count, DEVICES_PAGE);
  useEffect(() => {
    if (!behind) return;
    const timer = setTimeout(devices.reload, ROLLOUT_POLL_MS);
    return () => clearTimeout(timer);
  }, [behind, shown]);
  return (
    <section aria-labelledby="rollout-devices-h">
      <h3 id="rollout-devices-h">Devices</h3>
      <div class="toolbar">
        <Field label="Show the devices">
          <select name="rollout-device-status" value={status} onChange={(e) => setStatus(e.currentTarget.value as JobStatus | '')}>
            {JOB_STATUSES.map((s) => (
              <option value={s}>
                {stateLabel(s)} ({rollout.counts[s]})
              </option>
            ))}
            <option value="">in every state ({rollout.total})</option>
          </select>
        </Field>
      </div>
      <ErrorBox error={devices.error} />
      {devices.data && !devices.data.items.length && <p>No device {status ? `is ${stateLabel(status)}` : 'yet'}.</p>}
      {devices.data && devices.data.items.length > 0 && (
        <table class="list" data-testid="rollout-devices">
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
              <tr>
                <td>
                  <a href={routeHash({ page: 'device', workspaceId, deviceId: d.device_id })}>{d.device_id}</a>
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
