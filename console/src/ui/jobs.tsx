import { useState } from 'preact/hooks';
import type { Fota, Job } from '../lib/api';
import { routeHash } from '../lib/router';
import type { PageProps } from './page';
import { ErrorBox, Field, useLoad, when } from './components';
import { RolloutSettingsFieldset, ScheduleFotaForm, ScheduleJobForm, useRolloutSettings, type Target } from './schedule';

/**
 * Jobs and FOTA: schedule on one device, or on fleets with the settings of the rollout that
 * records the scheduling; a fleet-wide scheduling then opens its rollout's page.
 */
export const JobsPage = ({ api, workspaceId, navigate }: PageProps) => {
  const fleets = useLoad(() => api.listFleets(workspaceId), [workspaceId]);
  const [mode, setMode] = useState<'device' | 'fleets'>('fleets');
  const [deviceId, setDeviceId] = useState('');
  const [fleetIds, setFleetIds] = useState<string[]>([]);
  const [last, setLast] = useState<Job | Fota | undefined>(undefined);
  const settings = useRolloutSettings();

  const target: Target =
    mode === 'device'
      ? { kind: 'device', deviceId: deviceId.trim() }
      : { kind: 'fleets', workspaceId, fleetIds, rollout: settings.settings, invalid: settings.invalid, onApiError: settings.onApiError };

  const scheduled = (answer: Job | Fota) => {
    if (answer.rollout_id) navigate({ page: 'rollout', workspaceId, rolloutId: answer.rollout_id });
    else setLast(answer);
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
          <>
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
            <RolloutSettingsFieldset settings={settings} />
            <p class="hint">
              A scheduling on fleets is recorded as a rollout, followed on the <a href={routeHash({ page: 'rollouts', workspaceId })}>Rollouts</a> page.
            </p>
          </>
        )}
      </section>
      <div class="columns">
        <ScheduleJobForm api={api} target={target} onScheduled={scheduled} />
        <ScheduleFotaForm api={api} workspaceId={workspaceId} target={target} onScheduled={scheduled} />
      </div>
      {last && (
        <p role="status" data-testid="scheduled">
          Scheduled: {last.status} at {when(last.scheduled_at)}.
          {mode === 'device' && deviceId && (
            <>
              {' '}
              <a href={routeHash({ page: 'device', workspaceId, deviceId: deviceId.trim() })}>Open the device</a>
            </>
          )}
        </p>
      )}
    </>
  );
};
