import { useState } from 'preact/hooks';
import type { Fota, Job } from '../lib/api';
import { queryProblem, type QueryProblem } from '../lib/find';
import { routeHash } from '../lib/router';
import type { PageProps } from './page';
import { ErrorBox, Name, useLoad, when } from './components';
import { EntityPicker, pickedIds, usePickerState, useWorkspaceItems } from './picker';
import { QueryField } from './query-box';
import { RolloutSettingsFieldset, ScheduleFotaForm, ScheduleJobForm, useRolloutSettings, type Target } from './schedule';
import { ChangeStateForm } from './state-form';

type Mode = 'device' | 'fleets' | 'group' | 'query';

/**
 * Jobs and FOTA: schedule on one device, or on fleets (all of their devices, a group's, or those a
 * query finds; continuous: also those that match later) with the settings of the rollout that
 * records the scheduling; a fleet-wide scheduling then opens its rollout's page.
 */
export const JobsPage = ({ api, workspaceId, navigate, group: presetGroup }: PageProps & { group?: string }) => {
  const fleets = useLoad(() => api.listFleets(workspaceId), [workspaceId]);
  const [mode, setMode] = useState<Mode>(presetGroup ? 'group' : 'fleets');
  const items = useWorkspaceItems(api, workspaceId);
  const groups = useLoad(
    () => api.listGroups(workspaceId, { limit: 100 }).then((page) => page.items.map((g) => ({ id: g.id, name: g.name, detail: g.query }))),
    [workspaceId],
  );
  const groupPick = usePickerState(presetGroup ? [presetGroup] : []);
  const groupId = pickedIds(groupPick, groups.data)[0] ?? '';
  const [query, setQuery] = useState('');
  // the query's 400 (from the dry run or the scheduling), with the query it was about
  const [problem, setProblem] = useState<{ query: string; problem: QueryProblem } | undefined>(undefined);
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
          ...(mode === 'group' && groupId ? { group: { id: groupId, name: groups.data?.find((g) => g.id === groupId)?.name ?? groupId } } : {}),
          ...(mode === 'query' && query.trim() ? { q: query.trim() } : {}),
          rollout: settings.settings,
          invalid: settings.invalid || (mode === 'group' && !groupId) || (mode === 'query' && !query.trim()),
          onApiError: (error: unknown) => {
            settings.onApiError(error);
            const found = queryProblem(error);
            setProblem(found && { query: query.trim(), problem: found });
          },
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
            <input type="radio" name="target" value="fleets" checked={mode === 'fleets'} onChange={() => setMode('fleets')} /> fleets
          </label>
          <label>
            <input type="radio" name="target" value="group" checked={mode === 'group'} onChange={() => setMode('group')} /> a group
          </label>
          <label>
            <input type="radio" name="target" value="query" checked={mode === 'query'} onChange={() => setMode('query')} /> a query
          </label>
          <label>
            <input type="radio" name="target" value="device" checked={mode === 'device'} onChange={() => setMode('device')} /> one device
          </label>
        </fieldset>
        {mode === 'device' ? (
          <>
            <EntityPicker label="Device" name="target-device" hint="Type part of its name (or its ID)" items={items.devices} state={device} required />
            <ErrorBox error={items.error} />
          </>
        ) : (
          <>
            {mode === 'group' && (
              <>
                <EntityPicker
                  label="Group"
                  name="target-group"
                  hint="Type part of its name: its devices now (and, continuous, those that match later)"
                  items={groups.data}
                  state={groupPick}
                  required
                />
                <ErrorBox error={groups.error} />
              </>
            )}
            {mode === 'query' && (
              <QueryField
                name="target-query"
                label="Devices that match"
                value={query}
                onInput={(text) => {
                  setQuery(text);
                  setProblem(undefined);
                }}
                problem={problem?.problem}
                problemQuery={problem?.query ?? ''}
                required
              />
            )}
            <fieldset>
              <legend>
                {mode === 'fleets' ? 'Fleets (none chosen: every fleet of the workspace)' : 'In fleets (none chosen: every fleet of the workspace)'}
              </legend>
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
      {target.kind === 'fleets' ? (
        <ChangeStateForm api={api} target={target} onChanged={(change) => navigate({ page: 'rollout', workspaceId, rolloutId: change.rollout_id })} />
      ) : (
        <p class="hint">
          One device’s desired state is edited on its page
          {deviceId && (
            <>
              {': '}
              <a href={routeHash({ page: 'device', workspaceId, deviceId })}>open the device</a>
            </>
          )}
          .
        </p>
      )}
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
