import { useLayoutEffect, useState } from 'preact/hooks';
import { JOB_STATUSES, type DeviceCredentials, type JobStatus } from '../lib/api';
import { ApiError } from '../lib/errors';
import { JOB_STATE_MEANINGS, jobOpen, stateLabel } from '../lib/jobs';
import { withConnection } from '../lib/live';
import { routeHash } from '../lib/router';
import type { PageProps } from './page';
import { Busy, download, ErrorBox, Field, Name, Submit, useAction, useLoad, when } from './components';
import { useConfirm } from './confirm';
import { useLive } from './live';
import { ScheduleFotaForm, ScheduleJobForm } from './schedule';
import { DeviceHealth } from './device-health';
import { DeviceStatePanel } from './device-state';
import { DeviceAlarms } from './alarms';
import { DeviceConditions } from './device-conditions';
import { DeleteDevice } from './delete-device';
import { TagChips, TagsEditor } from './tags';

/** What a 409 of a cancel means: the job or FOTA ended before the cancel came. */
const CANCEL_CONFLICT_HINT = 'It ended before the cancel arrived: the page now shows how.';

/** One device: rename or move it, its connection state, health, state, conditions, identities, jobs and FOTA. */
export const DevicePage = ({ api, workspaceId, deviceId, navigate }: PageProps & { deviceId: string }) => {
  const device = useLoad(() => api.getDevice(workspaceId, deviceId), [workspaceId, deviceId]);
  // Its connection as it changes; read again after a reconnection (or every 30 s while it is down).
  useLive(workspaceId, 'connection', (message) => {
    if (!message) device.reload();
    else if (message.device_id === deviceId) device.setData((d) => d && withConnection(d, message));
  });
  // Its new points as they are stored: how many since the page opened, when, which tags.
  const [newData, setNewData] = useState<{ deviceId: string; count: number; at: string; tags: string[] } | undefined>(undefined);
  useLive(workspaceId, 'data', (message) => {
    if (message?.device_id !== deviceId) return;
    setNewData((was) => ({
      deviceId,
      count: (was?.deviceId === deviceId ? was.count : 0) + message.count,
      at: message.last_at,
      tags: message.tags,
    }));
  });
  const fleets = useLoad(() => api.listFleets(workspaceId), [workspaceId]);
  const identities = useLoad(() => api.listIdentities(workspaceId, deviceId), [workspaceId, deviceId]);
  const [jobStatus, setJobStatus] = useState<JobStatus | ''>('');
  const jobs = useLoad(() => api.listJobs(deviceId, jobStatus || undefined), [deviceId, jobStatus]);
  // no FOTA scheduled yet is a 404, not an error to show
  const fota = useLoad(() => api.getFota(deviceId).catch((e) => (e instanceof ApiError && e.status === 404 ? null : Promise.reject(e))), [deviceId]);
  const [name, setName] = useState('');
  const [fleetId, setFleetId] = useState('');
  const [credentials, setCredentials] = useState<DeviceCredentials | undefined>(undefined);
  const save = useAction();
  const ids = useAction();
  const revokeConfirm = useConfirm();
  const cancel = useAction();
  const cancelFota = useAction();
  // The form follows the device as loaded or saved, in the same commit as the page that shows it: a
  // (deferred) effect could land after the person has begun typing, and put the old name back.
  useLayoutEffect(() => {
    if (device.data) {
      setName(device.data.name);
      setFleetId(device.data.fleet_id);
    }
  }, [device.data]);

  if (device.error) return <ErrorBox error={device.error} />;
  if (!device.data) return <Busy label="Loading the device…" />;
  const d = device.data;
  return (
    <>
      <p>
        <a href={routeHash({ page: 'devices', workspaceId })}>← All devices</a>
      </p>
      <h2>
        Device <Name text={d.name} wide /> <code>{d.id}</code>
      </h2>
      <dl class="facts">
        <dt>Fleet</dt>
        <dd>
          <Name text={d.fleet_name} wide />
        </dd>
        <dt>Connection</dt>
        <dd data-testid="connection">{d.connected ? 'connected' : 'offline'}</dd>
        <dt>Last connected</dt>
        <dd>{when(d.last_connected_at)}</dd>
        <dt>Last disconnected</dt>
        <dd>{when(d.last_disconnected_at)}</dd>
        <dt>New data</dt>
        <dd data-testid="new-data">
          {newData?.deviceId === deviceId ? (
            <>
              {newData.count} {newData.count === 1 ? 'point' : 'points'} since this page opened; last {when(newData.at)} ({newData.tags.join(', ')}){' '}
              <a href={routeHash({ page: 'data', workspaceId })}>See the data</a>
            </>
          ) : (
            'none since this page opened'
          )}
        </dd>
        <dt>Tags</dt>
        <dd>
          <TagChips workspaceId={workspaceId} tags={d.tags} />
        </dd>
        <dt>Physical ID</dt>
        <dd>{d.phys_id || '—'}</dd>
        <dt>Created</dt>
        <dd>{when(d.created_at)}</dd>
      </dl>
      <button type="button" onClick={device.reload}>
        Refresh
      </button>
      <DeviceHealth api={api} workspaceId={workspaceId} device={d} reloadDevice={device.reload} />
      <DeviceStatePanel api={api} workspaceId={workspaceId} deviceId={deviceId} />
      <DeviceAlarms api={api} workspaceId={workspaceId} deviceId={deviceId} />
      <DeviceConditions api={api} workspaceId={workspaceId} deviceId={deviceId} />

      <form
        class="inline"
        aria-labelledby="device-edit"
        onSubmit={async (e) => {
          e.preventDefault();
          const updated = await save.run(() => api.updateDevice(workspaceId, deviceId, { name: name.trim(), fleet_id: fleetId }));
          if (updated) device.setData(updated);
        }}
      >
        <h3 id="device-edit">Rename or move</h3>
        <Field label="Name">
          <input name="rename" required maxLength={128} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </Field>
        <Field label="Fleet">
          <select name="move-fleet" value={fleetId} onChange={(e) => setFleetId(e.currentTarget.value)}>
            {(fleets.data ?? [{ id: d.fleet_id, name: d.fleet_name }]).map((f) => (
              <option value={f.id} title={f.name}>
                {f.name}
              </option>
            ))}
          </select>
        </Field>
        <Submit busy={save.busy}>Save</Submit>
        <ErrorBox error={save.error} />
      </form>

      <TagsEditor api={api} workspaceId={workspaceId} device={d} onSaved={(updated) => device.setData(updated)} />

      <section aria-labelledby="ids-h">
        <h3 id="ids-h">Identities</h3>
        <ErrorBox error={identities.error ?? ids.error} />
        {credentials && (
          <div class="secret" role="region" aria-label="New credentials">
            <p>
              The credentials of identity <code>{credentials.devinfo.key_id}</code> are shown only now. Download them and keep them secret: they cannot be read
              again.
            </p>
            <button type="button" onClick={() => download('zdevice.json', JSON.stringify(credentials, null, 2), 'application/json')}>
              Download zdevice.json
            </button>{' '}
            <button type="button" onClick={() => setCredentials(undefined)}>
              I have saved them
            </button>
          </div>
        )}
        {revokeConfirm.dialog}
        <table class="list">
          <thead>
            <tr>
              <th scope="col">ID</th>
              <th scope="col">Type</th>
              <th scope="col">Created</th>
              <th scope="col">Revoked</th>
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {identities.data?.map((i) => (
              <tr>
                <td>
                  <code>{i.id}</code>
                </td>
                <td>{i.type}</td>
                <td>{when(i.created_at)}</td>
                <td>{when(i.revoked_at)}</td>
                <td>
                  {!i.revoked_at && (
                    <button
                      type="button"
                      aria-label={`Revoke identity ${i.id}`}
                      onClick={async () => {
                        const sure = await revokeConfirm.ask({
                          title: `Revoke identity ${i.id}?`,
                          consequence: (
                            <p>
                              The device can no longer sign in with this key: its open MQTT session is closed and its tokens are refused. A revoked identity
                              cannot be restored; the device needs a new one.
                            </p>
                          ),
                          confirmLabel: 'Revoke the identity',
                        });
                        if (!sure) return;
                        if (await ids.run(() => api.revokeIdentity(workspaceId, deviceId, i.id))) identities.reload();
                      }}
                    >
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        <button
          type="button"
          disabled={ids.busy}
          onClick={async () => {
            const created = await ids.run(() => api.createIdentity(workspaceId, deviceId));
            if (created) {
              setCredentials(created.credentials);
              identities.reload();
            }
          }}
        >
          Create identity
        </button>
      </section>

      <section aria-labelledby="jobs-h">
        <h3 id="jobs-h">Jobs</h3>
        <div class="toolbar">
          <Field label="Show jobs">
            <select name="jobs-status" value={jobStatus} onChange={(e) => setJobStatus(e.currentTarget.value as JobStatus | '')}>
              <option value="">in every state</option>
              {JOB_STATUSES.map((s) => (
                <option value={s}>{stateLabel(s)}</option>
              ))}
            </select>
          </Field>
        </div>
        <ErrorBox error={jobs.error} />
        <ErrorBox error={cancel.error} hints={{ 409: CANCEL_CONFLICT_HINT }} />
        <table class="list" data-testid="device-jobs">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">State</th>
              <th scope="col">Scheduled</th>
              <th scope="col">Ended</th>
              <th scope="col">Value</th>
              <th scope="col">Result</th>
              <th scope="col">Rollout</th>
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {jobs.data?.map((j) => (
              <tr data-job={j.name}>
                <td>{j.name}</td>
                <td data-testid="job-status">{stateLabel(j.status)}</td>
                <td>{when(j.scheduled_at)}</td>
                <td>{when(j.completed_at)}</td>
                <td>
                  <code>{JSON.stringify(j.value)}</code>
                </td>
                <td>{j.result ? <code>{JSON.stringify(j.result)}</code> : '—'}</td>
                <td>{j.rollout_id ? <a href={routeHash({ page: 'rollout', workspaceId, rolloutId: j.rollout_id })}>{j.rollout_id}</a> : '—'}</td>
                <td>
                  {jobOpen(j.status) && (
                    <button
                      type="button"
                      aria-label={`Cancel job ${j.name}`}
                      disabled={cancel.busy}
                      onClick={async () => {
                        if (!confirm(`Cancel job ${j.name} on this device?`)) return;
                        await cancel.run(() => api.cancelJob(deviceId, j.name));
                        jobs.reload();
                      }}
                    >
                      Cancel
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        <button type="button" onClick={jobs.reload}>
          Refresh jobs
        </button>
        <details class="hint">
          <summary>What the states mean</summary>
          <dl class="facts">
            {JOB_STATUSES.map((s) => (
              <>
                <dt>{stateLabel(s)}</dt>
                <dd>{JOB_STATE_MEANINGS[s]}</dd>
              </>
            ))}
          </dl>
        </details>
        <ScheduleJobForm api={api} target={{ kind: 'device', deviceId }} onScheduled={jobs.reload} />
      </section>

      <section aria-labelledby="fota-h">
        <h3 id="fota-h">Firmware (FOTA)</h3>
        <ErrorBox error={fota.error} />
        <ErrorBox error={cancelFota.error} hints={{ 409: CANCEL_CONFLICT_HINT }} />
        <p data-testid="device-fota">
          {fota.data
            ? `${fota.data.value.firmware_id} ${fota.data.value.firmware_version}: ${stateLabel(fota.data.status)} (scheduled ${when(fota.data.scheduled_at)}${
                fota.data.completed_at ? `, ended ${when(fota.data.completed_at)}` : ''
              })${fota.data.message ? `: “${fota.data.message}”` : ''}`
            : fota.loading
              ? 'Loading…'
              : 'No firmware update scheduled.'}
        </p>
        {fota.data?.rollout_id && (
          <p>
            Part of <a href={routeHash({ page: 'rollout', workspaceId, rolloutId: fota.data.rollout_id })}>rollout {fota.data.rollout_id}</a>.
          </p>
        )}
        {fota.data && jobOpen(fota.data.status) && (
          <button
            type="button"
            disabled={cancelFota.busy}
            onClick={async () => {
              if (!confirm('Cancel the firmware update on this device?')) return;
              const canceled = await cancelFota.run(() => api.cancelFota(deviceId));
              if (canceled) fota.setData(canceled);
              else fota.reload();
            }}
          >
            Cancel FOTA
          </button>
        )}{' '}
        <button type="button" onClick={fota.reload}>
          Refresh FOTA
        </button>
        <ScheduleFotaForm api={api} workspaceId={workspaceId} target={{ kind: 'device', deviceId }} onScheduled={(f) => fota.setData(f)} />
      </section>
      <DeleteDevice api={api} workspaceId={workspaceId} device={d} navigate={navigate} />
    </>
  );
};
