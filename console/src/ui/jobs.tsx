import { useEffect, useState } from 'preact/hooks';
import type { Fota, Job } from '../lib/api';
import { ApiError } from '../lib/errors';
import { countStatuses, mapLimit, type DeviceStatus } from '../lib/jobs';
import { routeHash } from '../lib/router';
import type { PageProps } from './page';
import { Busy, ErrorBox, Field, useAction, useLoad, when } from './components';
import { ScheduleFotaForm, ScheduleJobForm, type Target } from './schedule';

/** Something scheduled on fleets from this page, with where each of its devices stands. */
interface Tracked {
  kind: 'job' | 'fota';
  name: string;
  scheduledAt: string;
  devices: string[];
  statuses?: DeviceStatus[];
}

const MAX_TRACKED = 20;

/** What was scheduled on fleets, kept in this browser per workspace so a reload can still follow it. */
const useTracked = (workspaceId: string) => {
  const key = `fleetstream.tracked.${workspaceId}`;
  const [tracked, setTracked] = useState<Tracked[]>(() => {
    try {
      return JSON.parse(localStorage.getItem(key) ?? '[]') as Tracked[];
    } catch {
      return [];
    }
  });
  useEffect(() => {
    try {
      localStorage.setItem(key, JSON.stringify(tracked.slice(0, MAX_TRACKED).map(({ statuses: _, ...t }) => t)));
    } catch {
      // over the browser's storage quota (a job on 100,000 devices): kept for this visit only
    }
  }, [tracked]);
  return [tracked, setTracked] as const;
};

/** Jobs and FOTA: schedule on one device or on fleets, then follow pending/done per device. */
export const JobsPage = ({ api, workspaceId }: PageProps) => {
  const fleets = useLoad(() => api.listFleets(workspaceId), [workspaceId]);
  const [mode, setMode] = useState<'device' | 'fleets'>('fleets');
  const [deviceId, setDeviceId] = useState('');
  const [fleetIds, setFleetIds] = useState<string[]>([]);
  const [tracked, setTracked] = useTracked(workspaceId);
  const [last, setLast] = useState<Job | Fota | undefined>(undefined);
  const [progress, setProgress] = useState<{ done: number; of: number } | undefined>(undefined);
  const check = useAction();

  const target: Target = mode === 'device' ? { kind: 'device', deviceId: deviceId.trim() } : { kind: 'fleets', workspaceId, fleetIds };

  /** Reads each device's status of a tracked job or FOTA, 8 at a time, with progress. */
  const refresh = async (index: number) => {
    const t = tracked[index];
    setProgress({ done: 0, of: t.devices.length });
    const statuses = await check.run(() =>
      mapLimit(
        t.devices,
        8,
        async (id): Promise<DeviceStatus> => {
          try {
            const status = t.kind === 'job' ? (await api.getJob(id, t.name)).status : (await api.getFota(id)).status;
            return { deviceId: id, status };
          } catch (e) {
            return { deviceId: id, error: e instanceof ApiError ? e.message : String(e) };
          }
        },
        (done) => setProgress({ done, of: t.devices.length }),
      ),
    );
    setProgress(undefined);
    if (statuses) setTracked((all) => all.map((x, i) => (i === index ? { ...x, statuses } : x)));
  };

  const remember = (kind: 'job' | 'fota', name: string, answer: Job | Fota) => {
    setLast(answer);
    if (answer.devices) setTracked((all) => [{ kind, name, scheduledAt: answer.scheduled_at, devices: answer.devices! }, ...all]);
  };

  return (
    <>
      <section aria-labelledby="target-h">
        <h2 id="target-h">Where</h2>
        <fieldset>
          <legend>Schedule on</legend>
          <label>
            <input type="radio" name="target" checked={mode === 'fleets'} onChange={() => setMode('fleets')} /> fleets
          </label>
          <label>
            <input type="radio" name="target" checked={mode === 'device'} onChange={() => setMode('device')} /> one device
          </label>
        </fieldset>
        {mode === 'device' ? (
          <Field label="Device ID">
            <input name="target-device" required value={deviceId} onInput={(e) => setDeviceId(e.currentTarget.value)} />
          </Field>
        ) : (
          <fieldset>
            <legend>Fleets (none chosen: every fleet of the workspace)</legend>
            <ErrorBox error={fleets.error} />
            {fleets.data?.map((f) => (
              <label>
                <input
                  type="checkbox"
                  name="target-fleet"
                  value={f.id}
                  checked={fleetIds.includes(f.id)}
                  onChange={(e) => setFleetIds((ids) => (e.currentTarget.checked ? [...ids, f.id] : ids.filter((id) => id !== f.id)))}
                />{' '}
                {f.name}
              </label>
            ))}
          </fieldset>
        )}
      </section>
      <div class="columns">
        <ScheduleJobForm api={api} target={target} onScheduled={(job, name) => remember('job', name, job)} />
        <ScheduleFotaForm api={api} target={target} onScheduled={(fota) => remember('fota', `${fota.value.firmware_id} ${fota.value.firmware_version}`, fota)} />
      </div>
      {last && (
        <p role="status" data-testid="scheduled">
          Scheduled: {last.status}
          {last.devices ? ` on ${last.devices.length} devices` : ''} at {when(last.scheduled_at)}.
          {mode === 'device' && deviceId && (
            <>
              {' '}
              <a href={routeHash({ page: 'device', workspaceId, deviceId: deviceId.trim() })}>Open the device</a>
            </>
          )}
        </p>
      )}
      <section aria-labelledby="tracked-h">
        <h2 id="tracked-h">Scheduled on fleets</h2>
        {!tracked.length && <p>Jobs and FOTA scheduled on fleets from this page appear here, with each device's status.</p>}
        <ErrorBox error={check.error} />
        {progress && <Busy label={`Reading device statuses: ${progress.done} of ${progress.of}`} value={progress.done} max={progress.of} />}
        {tracked.map((t, index) => {
          const counts = t.statuses ? countStatuses(t.statuses) : undefined;
          return (
            <details open={index === 0}>
              <summary>
                {t.kind === 'job' ? 'Job' : 'FOTA'} {t.name} on {t.devices.length} devices, {when(t.scheduledAt)}
                {counts ? `: ${Object.entries(counts).map(([s, n]) => `${n} ${s}`).join(', ')}` : ''}
              </summary>
              <button type="button" disabled={check.busy} onClick={() => refresh(index)}>
                Check device statuses
              </button>
              {t.statuses && (
                <table class="list">
                  <thead>
                    <tr>
                      <th scope="col">Device</th>
                      <th scope="col">Status</th>
                    </tr>
                  </thead>
                  <tbody>
                    {t.statuses.slice(0, 500).map((s) => (
                      <tr>
                        <td>
                          <a href={routeHash({ page: 'device', workspaceId, deviceId: s.deviceId })}>{s.deviceId}</a>
                        </td>
                        <td>{'status' in s ? s.status : `could not be read: ${s.error}`}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
              {t.statuses && t.statuses.length > 500 && <p>The first 500 devices are listed; the counts above cover all {t.statuses.length}.</p>}
            </details>
          );
        })}
      </section>
    </>
  );
};
