import { useState } from 'preact/hooks';
import type { Fota, Job } from '../lib/api';
import { routeHash } from '../lib/router';
import type { PageProps } from './page';
import { ErrorBox, Name, useLoad, when } from './components';
import { EntityPicker, pickedIds, usePickerState, useWorkspaceItems } from './picker';
import { RolloutSettingsFieldset, ScheduleFotaForm, ScheduleJobForm, useRolloutSettings, type Target } from './schedule';

/**
 * Jobs and FOTA: schedule on one device, or on fleets with the settings of the rollout that
 * records the scheduling; a fleet-wide scheduling then opens its rollout's page.
 */
export const JobsPage = ({ api, workspaceId, navigate }: PageProps) => {
  const fleets = useLoad(() => api.listFleets(workspaceId), [workspaceId]);
  const [mode, setMode] = useState<'device' | 'fleets'>('fleets');
  const items = useWorkspaceItems(api, workspaceId);
  const device = usePickerState();
  // the device chosen by name, or the ID (or name) typed
  const deviceId = pickedIds(device, items.devices)[0] ?? '';
  const [fleetIds, setFleetIds] = useState<string[]>([]);
  const [last, setLast] = useState<Job | Fota | undefined>(undefined);
  const settings = useRolloutSettings();

  const target: Target =
    mode === 'device'
      ? { kind: 'device', deviceId }
      : {
          kind: 'fleets',
          workspaceId,
          fleetIds,
          fleetNames: Object.fromEntries((fleets.data ?? []).map((f) => [f.id, f.name])),
          rollout: settings.settings,
          invalid: settings.invalid,
          onApiError: settings.onApiError,
        };

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
          <>
            <EntityPicker label="Device" name="target-device" hint="Type part of its name (or its ID)" items={items.devices} state={device} required />
            <ErrorBox error={items.error} />
          </>
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
                  <Name text={f.name} />
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
              <a href={routeHash({ page: 'device', workspaceId, deviceId })}>Open the device</a>
            </>
          )}
        </p>
      )}
    </>
  );
};
